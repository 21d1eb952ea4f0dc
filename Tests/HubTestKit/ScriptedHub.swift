import Logging
import MotionCore
import MotionDevices
import MotionWire
import NIOCore
import NIOEmbedded
import Synchronization

@testable import MotionHub

/// A whole `Hub` on NIO's testing event loop, whose clock only the test moves (`advance`, `run`): its
/// devices are scripted (`ScriptedSource`), its clients record what they get and when (`Client`), and
/// its blocking jobs (a capture's stop, a save) run inline (`OffLoopWork.Runner.inline`). No socket,
/// no process, no thread, no sleep: a rule that takes 5 s of the daemon's time takes microseconds.
/// `NIOAsyncTestingEventLoop` rather than `EmbeddedEventLoop`: the test awaits it, so a test's body is
/// an ordinary async function, and every call into the hub runs on the loop, as the hub requires.
package final class ScriptedHub: Sendable {
    /// The hub's loop: its `now` is the daemon's clock, moved by the test.
    package let loop = NIOAsyncTestingEventLoop()
    /// The scripted devices.
    package let source: ScriptedSource
    /// The hub under test.
    package let hub: Hub

    /// A hub with `devices`, listed as at start. `maximumClients`: clients served at once; `store`:
    /// where its calibration and step history are kept (nil: nowhere); `log`: where its log goes
    /// (nil: the standard error, swift-log's default).
    /// `chipFunctions`: motiond.conf's `chip_functions`.
    package init(
        devices: [DeviceDescriptor], maximumClients: Int = 1000, store: StateStore? = nil, log: RecordedLog? = nil, chipFunctions: Bool = true
    ) async throws {
        source = ScriptedSource(devices: devices, usesChipFunctions: chipFunctions)
        let logger = log.map { log in Logger(label: "test") { _ in log } } ?? Logger(label: "test")
        hub = Hub(
            eventLoop: loop, logger: logger, release: "test", store: store, source: source, maximumClients: maximumClients, offLoopWork: .inline)
        try await list(devices)
    }

    /// A hub on `devices` with a client that has sent `line` (a WATCH or a POLL, as a test begins).
    package static func withClient(sending line: String, on devices: [DeviceDescriptor]) async throws -> (ScriptedHub, Client, Hub.ClientID) {
        let scripted = try await ScriptedHub(devices: devices)
        let (client, id) = try await scripted.connect()
        try await scripted.send(line: line, from: id)
        return (scripted, client, id)
    }

    /// The machine's devices are now `devices`, and those it could not use `problems` (a udev event's listing).
    package func list(_ devices: [DeviceDescriptor], problems: [DeviceError] = []) async throws {
        try await onLoop { hub in hub.apply(.success(DeviceListing(devices: devices, problems: problems))) }
    }

    /// Runs `body` with the hub on its loop, then what it made due now.
    @discardableResult
    package func onLoop<T: Sendable>(_ body: @escaping @Sendable (Hub) throws -> T) async throws -> T {
        let hub = hub
        let value = try await loop.executeInContext { try body(hub) }
        await settle()
        return value
    }

    /// A client of the hub that records each message with the loop's time, and its protocol line
    /// too if `keepingLines`.
    package func connect(keepingLines: Bool = false) async throws -> (Client, Hub.ClientID) {
        let client = Client(loop: loop, keepsLines: keepingLines)
        guard let id = try await onLoop({ hub in hub.connect(client) }) else { throw ScriptedHubError("the hub refused a client: it is full") }
        return (client, id)
    }

    /// Sends `request` from `id`, on the loop.
    package func send(_ request: Request, from id: Hub.ClientID) async throws {
        try await onLoop { hub in hub.handle(request, from: id) }
    }

    /// Sends the protocol line `line` from `id` as the socket's front end does: decoded, then served,
    /// or refused with the decoder's error (`ConnectionHandler.serve`).
    package func send(line: String, from id: Hub.ClientID) async throws {
        try await onLoop { hub in
            switch Request.decode(Array(line.utf8)) {
            case .success(let request): hub.handle(request, from: id)
            case .failure(let error): hub.reply(error, to: id)
            }
        }
    }

    /// Sends `request` from `client` (`id`) and returns the first reply (not a stream's message) it got
    /// after it, or nil if none came at once.
    package func ask(_ request: Request, from client: Client, _ id: Hub.ClientID) async throws -> AnyServerMessage? {
        let before = client.received.count
        try await send(request, from: id)
        return client.replies(after: before).first
    }

    /// Disconnects `id`, on the loop.
    package func disconnect(_ id: Hub.ClientID) async throws {
        try await onLoop { hub in hub.disconnect(id) }
    }

    /// Runs what is due now; a job handed off the loop ran inline, its completion runs here.
    package func settle() async {
        await loop.run()
    }

    /// Moves the clock by `step` until `condition` holds or `limit` has passed; returns the time it
    /// took, or nil.
    package func advance(
        by step: TimeAmount = .milliseconds(10), upTo limit: TimeAmount = .seconds(3), until condition: () -> Bool
    ) async -> TimeAmount? {
        let start = loop.now
        while !condition() {
            guard loop.now - start < limit else { return nil }
            await loop.advanceTime(by: step)
            await settle()
        }
        return loop.now - start
    }

    /// Moves the clock by `duration`, in steps of `step` (each a turn of the loop, as the daemon's
    /// timers fire).
    package func run(for duration: TimeAmount, step: TimeAmount = .milliseconds(10)) async {
        _ = await advance(by: step, upTo: duration) { false }
    }

    /// Feeds `reads` to `device`'s capture now, each read's samples then the end of the read, as a
    /// buffered device hands its scans over (`ScriptedSource.feed`); returns whether its capture was
    /// open to take them.
    @discardableResult
    package func feed(_ reads: [[SensorSample]], to device: DeviceNumber) async throws -> Bool {
        let source = source
        let taken = try await loop.executeInContext { source.feed(reads, to: device) }
        await settle()
        return taken
    }

    /// Stops the hub and its loop.
    package func shutDown() async throws {
        try await onLoop { hub in hub.stopAll() }
        await loop.shutdownGracefully()
    }

    /// The loop's clock in nanoseconds: the timestamp a polled sample read now has.
    package var now: Int64 { Int64(loop.now.uptimeNanoseconds) }

    /// What one client got: each message and the loop's time then.
    package final class Client: MessageSink, @unchecked Sendable {
        // @unchecked: written on the loop, read by the test between its turns (`executeInContext`).
        private let loop: NIOAsyncTestingEventLoop
        private let keepsLines: Bool
        /// Every message received, with the loop's time it came at, first first.
        package private(set) var received: [(message: AnyServerMessage, at: NIODeadline)] = []
        /// Each message's protocol line, if the client keeps them (nil: one that could not be encoded).
        package private(set) var lines: [String?] = []

        init(loop: NIOAsyncTestingEventLoop, keepsLines: Bool) { (self.loop, self.keepsLines) = (loop, keepsLines) }

        package func receive(_ message: AnyServerMessage, line: () -> ByteBuffer?) {
            received.append((message, loop.now))
            if keepsLines { lines.append(line().map { String(buffer: $0) }) }
        }

        /// The last line received whose class is `className` (`MOTION`), if the client keeps lines.
        package func lastLine(_ className: String) -> String? {
            lines.last { $0?.contains(#""class":"\#(className)""#) == true } ?? nil
        }

        /// Every message received.
        package var messages: [AnyServerMessage] { received.map(\.message) }

        /// The messages of `stream` received.
        package func messages(of stream: StreamKind) -> [AnyServerMessage] { messages.filter { $0.stream == stream } }

        /// The `ENDED` streams received.
        package var ended: [StreamKind] {
            messages.compactMap { if case .ended(let ended) = $0 { ended.stream } else { nil } }
        }

        /// The `ERROR` replies received.
        package var errors: [ErrorReply] {
            messages.compactMap { if case .error(let error) = $0 { error } else { nil } }
        }

        /// The replies (answers to requests, not streams' messages) received after the first `count` messages.
        package func replies(after count: Int = 0) -> [AnyServerMessage] {
            messages.dropFirst(count).filter {
                switch $0 {
                case .error, .watching, .snapshot, .devices, .status, .history: true
                default: false
                }
            }
        }

        /// The values `value` takes from the messages received that it reads (nil for the others).
        package func values<T>(_ value: (AnyServerMessage) -> T?) -> [T] { messages.compactMap(value) }
    }
}

/// What the kit could not do, said as a test failure.
package struct ScriptedHubError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// A client as the socket's front end is one (`ClientSink`): its lines go through its bounded queue,
/// its replies in request order, and it reads only while the test lets it (`isWritable`): a slow
/// reader is one whose connection takes nothing.
package final class LineClient: ClientSink, @unchecked Sendable {
    // @unchecked: written on the loop, read by the test between its turns (`executeInContext`).
    /// Whether the connection takes more now; set it back to true, then `ScriptedHub.flush` it.
    package var isWritable = true
    /// Every line sent, first first.
    package private(set) var lines: [String] = []
    /// Whether the hub closed the connection.
    package private(set) var closed = false
    /// Whether the hub reads the client's requests.
    package private(set) var reading = true
    private var written: [ByteBuffer] = []

    init() {}

    package func write(_ line: ByteBuffer) { written.append(line) }

    package func flush() {
        for buffer in written { lines += String(buffer: buffer).split(separator: "\n").map(String.init) }
        written.removeAll()
    }

    package func closeAfterWrites() {
        flush()
        closed = true
    }

    package func close() { closed = true }

    package func setReading(_ reading: Bool) { self.reading = reading }

    /// The lines sent, decoded.
    package var messages: [AnyServerMessage] { lines.compactMap { try? AnyServerMessage(line: Array($0.utf8)) } }
}

extension ScriptedHub {
    /// A client of the socket's kind (`LineClient`), greeted.
    package func connectLines() async throws -> (LineClient, Hub.ClientID) {
        let client = LineClient()
        guard let id = try await onLoop({ hub in hub.connect(client) }) else { throw ScriptedHubError("the hub refused a client: it is full") }
        try await onLoop { hub in hub.greet(id) }
        return (client, id)
    }

    /// Writes what `id`'s connection takes now (it became writable).
    package func flush(_ id: Hub.ClientID) async throws {
        try await onLoop { hub in hub.flush(id) }
    }
}

/// Keeps every message a hub logged, for a test to check what it said and how often.
package final class RecordedLog: LogHandler, @unchecked Sendable {
    // @unchecked: `messages` is behind its lock; the rest is set once.
    private let messages = Mutex<[String]>([])
    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level = .trace

    package init() {}

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        let details = (event.metadata ?? [:]).map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        messages.withLock { $0.append("\(event.message) \(details)") }
    }

    /// How many messages starting with `prefix`, with `detail` among their metadata (empty: any), were logged.
    package func count(_ prefix: String, about detail: String = "") -> Int {
        messages.withLock { $0.count { $0.hasPrefix(prefix) && (detail.isEmpty || $0.contains(detail)) } }
    }
}
