import ArgumentParser
import FoundationEssentials
import MotionClientCore
import MotionSystem

#if canImport(Glibc)
import Glibc
#endif

/// `motionctl watch`: the values, live.
struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show attitude, gravity, user acceleration, rotation rate, magnetic field, proximity, light, orientation and presence live.",
        discussion: """
            In a terminal the view is redrawn in place; piped, or with --json, one line per update. \
            --stream significant_motion arms the one-shot significant-motion trigger: its one event ends that watch.
            """)

    @OptionGroup var connection: ConnectionOptions

    @Option(help: "Seconds between updates.")
    var interval: Double = 0.1

    @Option(help: "Seconds a sample may wait, so that motiond sends samples in batches and wakes less often (0 to 10).")
    var latency: Double = 0

    @Option(help: "The attitude's reference frame: xArbitraryZVertical, xArbitraryCorrectedZVertical, xMagneticNorthZVertical, xTrueNorthZVertical.")
    var frame: AttitudeReferenceFrame = .xArbitraryZVertical

    @Option(name: .customLong("stream"), help: "A stream to watch (repeat for more; default: motion, proximity, light, orientation and presence, those the machine has).")
    var streams: [StreamKind] = []

    @Flag(help: "Print each update as one JSON line.")
    var json = false

    @Flag(help: "Print the first full view (or first update with --json) and exit.")
    var once = false

    func run() async throws {
        let client = connection.client
        var streams = self.streams
        if streams.isEmpty {
            let devices = try reportingErrors { try client.devices() }
            let kinds = Set(devices.flatMap(\.kinds))
            // Motion needs only an accelerometer; it says itself what the other sensors would add.
            if kinds.contains(.accelerometer) { streams += [.motion, .orientation, .tilt, .pedometer, .activity, .gesture] }
            let locations = Set(devices.filter { $0.kinds.contains(.accelerometer) }.compactMap(\.location))
            if locations.isSuperset(of: ["display", "base"]) { streams.append(.hinge) }
            if kinds.contains(.proximity) { streams.append(.proximity) }
            if kinds.contains(.light) { streams.append(.light) }
            // A human-presence sensor, else a proximity sensor, tells presence (protocol 1.11).
            if kinds.contains(.humanPresence) || kinds.contains(.proximity) { streams.append(.presence) }
            if kinds.contains(.pressure) { streams.append(.altitude) }
            guard !streams.isEmpty else {
                writeStandardError("motionctl: motiond has no motion sensors to watch (see `motionctl devices`)\n")
                throw ExitCode(ExitStatus.failure)
            }
        }
        let inPlace = !json && Syscall.isTerminal(STDOUT_FILENO)
        var view = MotionView()
        var lastDraw = Date.distantPast
        do {
            for try await update in client.updates(of: streams, interval: interval, frame: frame, latency: latency, reconnects: !once) {
                view.take(update)
                if json {
                    write(line(update) + "\n")
                    if once { return }
                    continue
                }
                let complete = !streams.contains(.motion) || view.latest.motion != nil
                guard complete, Date().timeIntervalSince(lastDraw) >= 0.05 || once else { continue }
                lastDraw = Date()
                let lines = view.render()
                if inPlace {
                    // Home, each line cleared to its end, then whatever was below cleared.
                    write("\u{1B}[H" + lines.map { $0 + "\u{1B}[K" }.joined(separator: "\n") + "\u{1B}[J")
                } else {
                    write(lines.joined(separator: "\n") + "\n\n")
                }
                if once {
                    if inPlace { write("\n") }
                    return
                }
            }
        } catch let error as MotionClientError {
            throw fail(error)
        }
    }

    /// Unbuffered, so that a pipe sees each update at once.
    private func write(_ text: String) { writeStandardOutput(text) }

    /// The update's protocol line (a subscription hands on no unknown class, the one without a message).
    private func line(_ update: MotionClient.Update) -> String {
        update.message.map { protocolLine($0) } ?? ""
    }
}
