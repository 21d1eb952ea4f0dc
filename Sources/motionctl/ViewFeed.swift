import FoundationEssentials
import MotionClientCore
import MotionSystem
import Synchronization
import Dispatch
import MotionCore

#if canImport(Glibc)
import Glibc
#endif

/// `motionctl view`'s side of motiond: while a page is open, watches what the machine has, asks
/// `STATUS` every second, and hands the daemon's lines on as they are, in batches, to the page (they
/// are JSON already: nothing is encoded again on the way). With no page open for `ViewPages.grace` it
/// holds no connection, so that motiond's sensors and fusion stop (they run only while someone
/// watches), and what the pages were told is forgotten. Says when motiond is
/// not there, refuses this user, or goes silent, and tries again every second, so that the page
/// survives a restart of motiond.
final class ViewFeed: Sendable {
    /// What the page is told about the daemon.
    struct State: Sendable, Equatable, Encodable {
        /// `connected`, `absent` (no daemon), `denied` (the socket refuses this user), `silent`
        /// (connected, but nothing has come for `silenceLimit`: stopped or hung), `failed`.
        var state: String
        var socket: String
        var message: String
    }

    /// Wake-ups a second, each taking the lines that came meanwhile: fewer keep motionctl cheap.
    /// Batches go to the page at half this rate at most while the device turns, and once a second at
    /// rest (`ViewBatcher`): each event costs the browser as much as a small drawing.
    static let batchesPerSecond = 30.0
    /// The attitude's rate, Hz: a display's.
    static let motionRate = 60.0
    /// The raw sensors' rate on the plots, Hz.
    static let plotRate = 50.0
    /// Seconds without a line from motiond (which answers `STATUS` every second) before the page is
    /// told that it has gone silent.
    static let silenceLimit = 3.0

    let socketPath: String
    let frame: AttitudeReferenceFrame
    /// The pages whose event streams are open: motiond is watched only while there is one.
    let pages = ViewPages()

    init(socketPath: String, frame: AttitudeReferenceFrame) {
        self.socketPath = socketPath
        self.frame = frame
    }

    /// Runs on a thread of its own until the process ends: `publish` gets each batch of lines,
    /// `report` each change of the daemon's state, `forget` the end of a watch with no page left
    /// (what was said of motiond then may no longer hold).
    func start(
        publish: @escaping @Sendable ([[UInt8]]) -> Void, report: @escaping @Sendable (State) -> Void, forget: @escaping @Sendable () -> Void
    ) {
        let started = OSThread.startDetached(name: "view feed") { [self] in
            var last: State?
            while true {
                if !pages.areWanted {
                    // No page for the grace period: the next one is told afresh how motiond is.
                    if last != nil { forget() }
                    last = nil
                    pages.waitForOne()
                }
                guard let state = session(publish: publish, report: { state in
                    if state != last { report(state) }
                    last = state
                }) else { continue }
                if state != last { report(state) }
                last = state
                Syscall.sleep(nanoseconds: 1_000_000_000)
            }
        }
        // No thread (the process's limit): the page says so rather than waiting for ever.
        if let started { report(State(state: "failed", socket: socketPath, message: "motionctl cannot start its thread to watch motiond: \(started)")) }
    }

    /// One connection, for as long as it lasts and pages are wanted; what ended it, or nil when the
    /// last page left `ViewPages.grace` ago.
    private func session(publish: @Sendable ([[UInt8]]) -> Void, report: (State) -> Void) -> State? {
        do throws(MotionClientError) {
            let connection = try LineConnection(socketPath: socketPath)
            let devices = try connection.roundTrip(.devices(id: .integer(0)), id: .integer(0), expecting: DevicesReply.self, timeout: 5).devices
            for watch in watches(for: devices) { try connection.send(.watch(watch)) }
            let trigger = Self.significantMotionWatch(for: Set(devices.flatMap(\.kinds)))
            let connected = State(state: "connected", socket: socketPath, message: "motiond at \(socketPath)")
            report(connected)
            var statusID: Int64 = 1
            var nextStatus = Date()
            var nextBatch = Date()
            var lastLine = Date()
            var batcher = ViewBatcher()
            while pages.areWanted {
                if Date() >= nextStatus {
                    try connection.send(.status(id: .integer(statusID)))
                    statusID += 1
                    // Once a second from now: after a pause (a stopped process), no burst to catch up.
                    nextStatus = max(nextStatus + 1, Date())
                }
                // Sleep, then take all that came meanwhile: one wake-up a batch, not one a line.
                nextBatch = max(nextBatch + 1 / Self.batchesPerSecond, Date())
                Syscall.sleep(nanoseconds: Int64(max(0, nextBatch.timeIntervalSinceNow) * 1e9))
                let now = Date()
                var any = false
                while let line = try Self.lineWaiting(on: connection) {
                    if let trigger, Self.rearms(line) { try connection.send(.watch(trigger)) }
                    batcher.add(line)
                    any = true
                }
                if any {
                    lastLine = now
                    report(connected)
                } else if now.timeIntervalSince(lastLine) >= Self.silenceLimit {
                    // Connected, yet not even STATUS is answered: motiond is stopped (SIGSTOP, a
                    // debugger) or hung. The page must not show what it has as live.
                    report(
                        State(
                            state: "silent", socket: socketPath,
                            message: "motiond is not running: no data from \(socketPath) for \(Int(now.timeIntervalSince(lastLine))) s (stopped?)"))
                }
                if let batch = batcher.take(at: now) { publish(batch) }
            }
            return nil
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

    /// The streams the page shows, of those this machine has, each group at its rate. Not the raw
    /// gyroscope: the rotation plot draws `motion`'s rate, its bias removed.
    func watches(for devices: [DevicesReply.Device]) -> [Request.Watch] {
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
        // A human-presence sensor, else a proximity sensor, tells presence (protocol 1.11).
        if kinds.contains(.humanPresence) || kinds.contains(.proximity) { events.append(.presence) }
        if !events.isEmpty { watches.append(Request.Watch(streams: events)) }
        // The one-shot trigger on a watch of its own, armed again at each (`rearms`).
        if let trigger = Self.significantMotionWatch(for: kinds) { watches.append(trigger) }
        return watches
    }

    /// The watch that arms `significant_motion` where the machine can tell one (the chip's sensor,
    /// else the step detector on an accelerometer), else nil.
    static func significantMotionWatch(for kinds: Set<SensorKind>) -> Request.Watch? {
        kinds.contains(.significantMotion) || kinds.contains(.accelerometer) ? Request.Watch(streams: [.significantMotion]) : nil
    }

    /// Whether `line` is a `SIGNIFICANT_MOTION`, which ends its watch (protocol 1.11): the page shows
    /// each, so the feed arms the trigger again.
    static func rearms(_ line: [UInt8]) -> Bool { className(line) == SignificantMotionMessage.className }

    /// The `class` of a line of motiond's, which writes it first (`{"class":"MOTION",…`).
    static func className(_ line: [UInt8]) -> String? {
        let prefix = Array(#"{"class":""#.utf8)
        guard line.count > prefix.count, line.starts(with: prefix) else { return nil }
        let rest = line[prefix.count...]
        guard let end = rest.firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        return String(decoding: rest[..<end], as: UTF8.self)
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

/// The pages open, counted by the server's event streams and waited for by the feed's thread.
final class ViewPages: Sendable {
    /// Seconds motiond stays watched after the last page left: a reload closes the page's event
    /// stream and opens another within a second, and leaving motiond would stop its IMU and start
    /// its fusion over.
    static let grace = 5.0

    /// The pages open, and when the last left.
    private let pages = Mutex<(count: Int, emptySince: Date)>((0, .distantPast))
    /// Signalled at each page opened, for the one thread in `waitForOne` (a signal nobody waits
    /// for is taken by the next wait, which then looks at the count again).
    private let openedOne = DispatchSemaphore(value: 0)

    /// A page's event stream opened.
    func opened() {
        pages.withLock { $0.count += 1 }
        openedOne.signal()
    }

    /// A page's event stream closed.
    func closed() {
        pages.withLock { pages in
            pages.count -= 1
            if pages.count == 0 { pages.emptySince = Date() }
        }
    }

    /// Whether a page is open, or the last left less than `grace` ago.
    var areWanted: Bool {
        pages.withLock { $0.count > 0 || Date().timeIntervalSince($0.emptySince) < Self.grace }
    }

    /// Blocks until a page is open.
    func waitForOne() {
        while pages.withLock({ $0.count }) == 0 { openedOne.wait() }
    }
}

/// Gathers motiond's lines into the page's batches: every `turnInterval` while the device turns, its
/// hinge changes mode, or an event or a reply comes, but only every `restInterval` while nothing but samples of a device
/// at rest come. Each event costs the browser (headless chromium: 2.2 % of a core at 30
/// events a second, 0.5 % at 5, whatever their size), and so does each drawing of the plots they
/// scroll; at rest the page has nothing to move.
struct ViewBatcher {
    /// Seconds between batches at rest.
    static let restInterval = 1.0
    /// Seconds between batches at least, while the device turns: 15 a second, every other wake-up
    /// (the page plays the samples 0.1 s behind, and draws 30 frames a second).
    static let turnInterval = 1 / 15.0
    /// The turn, degrees, since the attitude last sent that makes the device one that moves: under
    /// one pixel of the page's model (its axes reach about 190 px from the centre: 1 degree is 3.3 px).
    static let turn = 0.1
    /// The samples' classes, which alone may wait. HINGE comes every 0.1 s (its watch's interval)
    /// whether the hinge moves or not: only a change of its mode is urgent.
    static let samples: Set<String> = ["MOTION", "ACCELEROMETER", "MAGNETOMETER", "ALTITUDE", "STATUS", "HINGE"]

    private var lines: [[UInt8]] = []
    private var urgent = false
    private var sent: Quaternion?
    private var newest: Quaternion?
    /// The mode of the last HINGE line.
    private var hingeMode: String?
    private var lastSent: Date = .distantPast

    /// Takes one line of motiond's.
    mutating func add(_ line: [UInt8]) {
        lines.append(line)
        guard let name = ViewFeed.className(line), Self.samples.contains(name) else { return urgent = true }
        if name == "HINGE" {
            let mode = Self.mode(line)
            if mode != hingeMode { urgent = true }
            hingeMode = mode
            return
        }
        guard name == "MOTION", let attitude = Self.attitude(line) else { return }
        newest = attitude
        if let sent, Self.degrees(sent, attitude) < Self.turn { return }
        urgent = true
    }

    /// The lines gathered, if they are to go at `now`.
    mutating func take(at now: Date) -> [[UInt8]]? {
        let since = now.timeIntervalSince(lastSent)
        // A thousandth of a second's slack: the wake-ups come at multiples of a thirtieth.
        guard !lines.isEmpty, urgent && since >= Self.turnInterval - 0.001 || since >= Self.restInterval - 0.001 else { return nil }
        defer {
            lines = []
            urgent = false
            lastSent = now
            sent = newest ?? sent
        }
        return lines
    }

    /// The angle between two attitudes, degrees.
    static func degrees(_ a: Quaternion, _ b: Quaternion) -> Double {
        let dot = abs(a.w * b.w + a.x * b.x + a.y * b.y + a.z * b.z)
        return 2 * acos(min(1, dot)) * 180 / .pi
    }

    private struct Motion: Decodable {
        struct Attitude: Decodable { var quaternion: Quaternion }
        var attitude: Attitude
    }

    private struct Hinge: Decodable { var mode: String }

    /// A `HINGE` line's mode; nil if it has none.
    private static func mode(_ line: [UInt8]) -> String? {
        try? JSONDecoder().decode(Hinge.self, from: Data(line)).mode
    }

    /// A `MOTION` line's attitude; nil if it has none (a malformed line goes on all the same).
    private static func attitude(_ line: [UInt8]) -> Quaternion? {
        try? JSONDecoder().decode(Motion.self, from: Data(line)).attitude.quaternion
    }
}
