import Foundation
import MotionClient

/// `motionctl view`'s side of motiond: watches what the machine has, asks `STATUS` every second, and
/// hands the daemon's lines on as they are, in batches, to the page (they are JSON already: nothing is
/// decoded or encoded again on the way). Says when motiond is not there or refuses this user, and
/// tries again every second, so that the page survives a restart of motiond.
final class ViewFeed: Sendable {
    /// What the page is told about the daemon.
    struct State: Sendable, Equatable, Encodable {
        /// `connected`, `absent` (no daemon), `denied` (the socket refuses this user), `failed`.
        var state: String
        var socket: String
        var message: String
    }

    /// Batches a second at most: the page draws at the display's rate, and a batch per frame or two
    /// is what it needs (attitude is watched at 60 Hz); fewer wake-ups keep motionctl cheap.
    static let batchesPerSecond = 30.0
    /// The attitude's rate, Hz: a display's.
    static let motionRate = 60.0
    /// The raw sensors' rate on the plots, Hz.
    static let plotRate = 50.0

    let socketPath: String
    let frame: AttitudeReferenceFrame

    init(socketPath: String, frame: AttitudeReferenceFrame) {
        self.socketPath = socketPath
        self.frame = frame
    }

    /// Runs on a thread of its own until the process ends: `publish` gets each batch of lines,
    /// `report` each change of the daemon's state.
    func start(publish: @escaping @Sendable ([[UInt8]]) -> Void, report: @escaping @Sendable (State) -> Void) {
        Thread { [self] in
            var last: State?
            while true {
                let state = session(publish: publish) { state in
                    if state != last { report(state) }
                    last = state
                }
                if state != last { report(state) }
                last = state
                Thread.sleep(forTimeInterval: 1)
            }
        }.start()
    }

    /// One connection, for as long as it lasts; what ended it.
    private func session(publish: @Sendable ([[UInt8]]) -> Void, connected: (State) -> Void) -> State {
        do throws(MotionClientError) {
            let connection = try LineConnection(socketPath: socketPath)
            let devices = try connection.roundTrip(.devices(id: .integer(0)), id: .integer(0), expecting: DevicesReply.self, timeout: 5).devices
            for watch in watches(for: devices) { try connection.send(.watch(watch)) }
            connected(State(state: "connected", socket: socketPath, message: "motiond at \(socketPath)"))
            var statusID: Int64 = 1
            var nextStatus = Date()
            var nextBatch = Date()
            while true {
                if Date() >= nextStatus {
                    try connection.send(.status(id: .integer(statusID)))
                    statusID += 1
                    // Once a second from now: after a pause (a stopped process), no burst to catch up.
                    nextStatus = max(nextStatus + 1, Date())
                }
                // Sleep, then take all that came meanwhile: one wake-up a batch, not one a line.
                nextBatch = max(nextBatch + 1 / Self.batchesPerSecond, Date())
                Thread.sleep(until: nextBatch)
                var batch: [[UInt8]] = []
                while let line = try Self.lineWaiting(on: connection) { batch.append(line) }
                if !batch.isEmpty { publish(batch) }
            }
        } catch {
            return Self.state(of: error, socket: socketPath)
        }
    }

    /// A line already read or readable now, else nil.
    private static func lineWaiting(on connection: LineConnection) throws(MotionClientError) -> [UInt8]? {
        do throws(MotionClientError) {
            return try connection.nextLine(timeout: 0)
        } catch {
            if case .timeout = error { return nil }
            throw error
        }
    }

    /// The streams the page shows, of those this machine has, each group at its rate.
    private func watches(for devices: [DevicesReply.Device]) -> [Request.Watch] {
        let kinds = Set(devices.flatMap(\.kinds))
        var watches: [Request.Watch] = []
        var raw: [StreamKind] = []
        var events: [StreamKind] = []
        if kinds.contains(.accelerometer) {
            watches.append(Request.Watch(streams: [.motion], interval: 1 / Self.motionRate, frame: frame))
            raw.append(.accelerometer)
            events += [.orientation, .tilt, .pedometer, .activity, .gesture]
        }
        if kinds.contains(.magnetometer) { raw.append(.magnetometer) }
        if !raw.isEmpty { watches.append(Request.Watch(streams: raw, interval: 1 / Self.plotRate)) }
        if kinds.contains(.pressure) { watches.append(Request.Watch(streams: [.altitude], interval: 0.1)) }
        let locations = Set(devices.filter { $0.kinds.contains(.accelerometer) }.compactMap(\.location))
        if locations.isSuperset(of: ["display", "base"]) { watches.append(Request.Watch(streams: [.hinge], interval: 0.1)) }
        if kinds.contains(.proximity) { events.append(.proximity) }
        if kinds.contains(.light) { events.append(.light) }
        if !events.isEmpty { watches.append(Request.Watch(streams: events)) }
        return watches
    }

    /// The name of the group that owns `path` (the socket's: its members may connect), if known.
    static func group(of path: String) -> String? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.groupOwnerAccountName] as? String
    }

    /// What the page says about `error`.
    static func state(of error: MotionClientError, socket: String) -> State {
        switch error {
        case .daemonNotRunning:
            State(state: "absent", socket: socket, message: "motiond is not running (no socket at \(socket)): start it with `sudo systemctl start motiond`")
        case .permissionDenied:
            State(
                state: "denied", socket: socket,
                message: "permission denied on \(socket): "
                    + (Self.group(of: socket).map { "add yourself to its group `\($0)` (`sudo usermod -aG \($0) $USER`, then log in again)" }
                        ?? "add yourself to its group (the installed service's is `motion`: `sudo usermod -aG motion $USER`, then log in again)"))
        case .connectionLost:
            State(state: "absent", socket: socket, message: "motiond went away (\(socket)); waiting for it to come back")
        default:
            State(state: "failed", socket: socket, message: "\(error)")
        }
    }
}
