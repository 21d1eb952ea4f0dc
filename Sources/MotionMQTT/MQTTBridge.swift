import CoreMetrics
import Logging
import MotionConfiguration
import MotionHub
import MotionSystem
import MotionWire
import NIOCore
import FoundationEssentials
import Synchronization

/// Publishes streams to an MQTT broker: a client of the hub like any socket client (its watches are
/// the configured streams), whose lines become messages on `<prefix><stream>`, with a retained
/// `<prefix>status` of `online`, and `offline` as the last will.
///
/// The broker costs the daemon nothing but the bridge: lines wait in a bounded queue (the oldest go
/// first when it is full, counted, and a `DROPPED` goes out before the stream's next message), at
/// most `window` messages are in libmosquitto's hands at once, and its own thread does all the
/// network work, reconnecting with backoff. Local clients never wait for it.
///
/// Confined to the hub's event loop, but for `Link`, shared with libmosquitto's thread.
final class MQTTBridge: MessageSink, @unchecked Sendable {
    // @unchecked: all state is the loop's but `connection` (set before the bridge is shared, then
    // only read) and `link` (a mutex), which `stop` uses off the loop.
    /// Messages handed to libmosquitto and not yet written (QoS 0) or acknowledged (QoS 1, 2).
    static let window = 64
    /// The retained status.
    static let online = "online", offline = "offline"

    /// The state both threads see, behind a lock.
    private final class SharedLink: Sendable {
        private let state = Mutex(Link())
        func withLock<R>(_ body: (inout Link) -> R) -> R { state.withLock { body(&$0) } }
    }

    private struct Link {
        var connected = false
        var inFlight = 0
        /// Whether the loop waits for the window to open (or a connection) to send what is queued.
        var awaitingWindow = false
        /// QoS 0 messages in flight when a connection died.
        var lost = 0
        /// Whether connection attempts have failed since the last that succeeded.
        var failing = false
    }

    private let hub: Hub
    private let settings: MQTTSettings
    private let logger: Logger
    private var connection: MQTTConnection?
    private let link = SharedLink()
    private var queue: DeliveryQueue<ByteBuffer>
    /// Each stream's topic, by `StreamKind.index`, as C strings made once.
    private let topics: [[CChar]]
    private let statusTopic: String
    /// In batch mode, each stream's message being filled (a JSON array), by `StreamKind.index`.
    private var batches: [ByteBuffer?]
    private var id: Hub.ClientID?
    /// The streams the hub sends us, as its last `WATCHING` said.
    private var watching: Set<StreamKind> = []
    /// Streams that waited for their sensor (logged once until watched again).
    private var waiting: Set<StreamKind> = []
    /// Messages a dying connection refused (`send`).
    private var refused = 0
    private let metrics: MQTTMetrics

    /// A bridge for `settings`, its metrics going to `metrics`.
    init(hub: Hub, settings: MQTTSettings, hostName: String, metrics: any MetricsFactory) {
        self.hub = hub
        self.settings = settings
        self.metrics = MQTTMetrics(factory: metrics)
        logger = hub.logger
        queue = DeliveryQueue(capacity: settings.queue)
        let prefix = settings.topicPrefix ?? "motiond/\(hostName)/"
        topics = StreamKind.allCases.map { Array((prefix + $0.rawValue).utf8CString) }
        statusTopic = prefix + "status"
        batches = Array(repeating: nil, count: StreamKind.allCases.count)
    }

    /// Connects (in the background: a broker that is away is retried) and starts watching; on the
    /// hub's loop. Throws what libmosquitto refused of the settings.
    func start(hostName: String) throws {
        hub.eventLoop.preconditionInEventLoop()
        let address = try settings.address()
        let bridge = NIOLoopBound(self, eventLoop: hub.eventLoop)
        let events = MQTTConnection.Events(
            connected: { [link, logger, metrics] code in
                guard code == 0 else {
                    return logger.warning("MQTT broker refused the connection", metadata: ["reason": "\(MQTTConnection.refusal(code))"])
                }
                link.withLock {
                    $0.connected = true
                    $0.failing = false
                }
                metrics.connections.increment()
                metrics.connected.record(1)
                // The loop publishes the status, then what waited.
                bridge.eventLoop.execute { bridge.value.connected() }
            },
            disconnected: { [link, metrics, qos = settings.qos] code in
                // QoS 0 messages in libmosquitto's hands are gone with the connection; QoS 1 and 2
                // ones are sent again on the next.
                let (wasConnected, wasFailing, lost) = link.withLock {
                    let before = ($0.connected, $0.failing, qos == 0 ? $0.inFlight : 0)
                    $0.failing = !$0.connected
                    $0.connected = false
                    $0.lost += before.2
                    $0.inFlight -= before.2
                    return before
                }
                metrics.connected.record(0)
                if lost > 0 { metrics.dropped.increment(by: lost) }
                // A lost connection is told at once; attempts that fail after it (or from the start),
                // once until one succeeds.
                if code != 0, wasConnected || !wasFailing {
                    bridge.eventLoop.execute { bridge.value.connectionLost(code, wasConnected: wasConnected) }
                }
            },
            published: { [link] in
                let wake = link.withLock {
                    $0.inFlight = max(0, $0.inFlight - 1)
                    guard $0.awaitingWindow, $0.inFlight <= MQTTBridge.window / 2 else { return false }
                    $0.awaitingWindow = false
                    return true
                }
                if wake { bridge.eventLoop.execute { bridge.value.drain() } }
            },
            overran: { [logger, broker = settings.broker] received, allowed in
                logger.warning(
                    "MQTT broker sent more than a broker owes a client that subscribes to nothing; connection cut, reconnecting",
                    metadata: ["broker": "\(broker)", "received bytes": "\(received)", "allowed": "\(allowed)"])
            })
        let connection = try MQTTConnection(clientID: settings.clientID ?? "motiond-\(hostName)", events: events)
        if let username = settings.username {
            try connection.setCredentials(username: username, password: try settings.passwordFile.map(Self.password(in:)))
        }
        if address.usesTLS {
            try Self.checkReadable(settings.caFile, setting: "ca_file")
            try Self.checkReadable(settings.certificateFile, setting: "certificate_file")
            try Self.checkReadable(settings.keyFile, setting: "key_file")
            try connection.setTLS(caFile: settings.caFile, certificateFile: settings.certificateFile, keyFile: settings.keyFile)
        }
        try connection.setWill(topic: statusTopic, payload: Self.offline, qos: 1, retain: true)
        try connection.start(host: address.host, port: address.port, keepalive: settings.keepalive)
        self.connection = connection
        id = hub.connect(self)
        hub.observeDevices { [unowned self] _ in watchMissing() }
        watchMissing()
        logger.info("MQTT bridge started", metadata: ["broker": "\(settings.broker)", "topics": "\(statusTopic.dropLast("status".count))…"])
    }

    /// libmosquitto says only "Invalid function arguments provided" of a TLS file it cannot read: say which, and why.
    private static func checkReadable(_ path: String?, setting: String) throws(Configuration.Invalid) {
        guard let path else { return }
        do {
            _ = try Syscall.openReadOnly(path)  // and closed at once, by its owner
        } catch {
            throw Configuration.Invalid(place: Place(key: "mqtt.\(setting)"), problem: "\(path) cannot be read: \(error)")
        }
    }

    /// The first line of a password file.
    private static func password(in path: String) throws -> String {
        guard let bytes = try? LocalFiles().contents(of: path, atMost: 4096) else {
            throw Configuration.Invalid(place: Place(key: "mqtt.password_file"), problem: "\(path) cannot be read")
        }
        return String(decoding: bytes.prefix { $0 != UInt8(ascii: "\n") && $0 != UInt8(ascii: "\r") }, as: UTF8.self)
    }

    /// Says goodbye to the broker (`offline`, retained) and stops its thread; off the loop, after
    /// `detach` on it.
    func stop() {
        guard let connection else { return }
        if link.withLock({ $0.connected }) { _ = connection.publish(topic: statusTopic, text: Self.offline, qos: 1, retain: true) }
        connection.stop()
    }

    /// Leaves the hub (at shutdown); on the loop.
    func detach() {
        hub.eventLoop.preconditionInEventLoop()
        if let id { hub.disconnect(id) }
        id = nil
    }

    // MARK: Watching

    /// Watches each configured stream the hub does not send yet (at start, and when devices change:
    /// a stream whose sensor was missing or went away starts when it appears).
    private func watchMissing() {
        guard let id else { return }
        for stream in settings.streams where !watching.contains(stream.stream) {
            let request = Request.Watch(
                id: .string(stream.stream.rawValue), streams: [stream.stream], interval: stream.interval, frame: stream.frame,
                latency: stream.latency)
            hub.handle(.watch(request), from: id)
        }
    }

    // MARK: The loop's side of the connection

    private func connected() {
        _ = connection?.publish(topic: statusTopic, text: Self.online, qos: 1, retain: true)
        let dropped = queue.totalDropped + link.withLock { $0.lost } + refused
        logger.notice("MQTT broker connected", metadata: ["broker": "\(settings.broker)", "dropped so far": "\(dropped)"])
        drain()
    }

    private func connectionLost(_ code: Int32, wasConnected: Bool) {
        let reason = MQTTConnection.Failure(operation: "connection", code: code)
        logger.warning(
            wasConnected ? "MQTT broker connection lost; reconnecting" : "MQTT broker cannot be reached; retrying",
            metadata: ["broker": "\(settings.broker)", "reason": "\(reason)", "backoff": "up to \(MQTTConnection.maximumReconnectDelay)"])
    }

    /// Hands queued messages to libmosquitto while it is connected and its window is open.
    private func drain() {
        guard let connection else { return }
        var handedOver = false
        // One wake-up of the network thread for all that is handed over now.
        defer { if handedOver { connection.wakeNetworkThread() } }
        while !queue.isEmpty {
            let open = link.withLock {
                guard $0.connected, $0.inFlight < Self.window else {
                    $0.awaitingWindow = true
                    return false
                }
                return true
            }
            guard open, let (line, kind, dropped) = queue.pop() else { return }
            guard case .stream(let stream) = kind else { continue }
            handedOver = true
            if let (_, count) = dropped, let bytes = try? Wire.encode(Dropped(stream: stream, count: count)) {
                bytes.withUnsafeBytes { send(UnsafeRawBufferPointer(rebasing: $0.dropLast()), stream: stream, on: connection) }
            }
            line.withUnsafeReadableBytes { send($0, stream: stream, on: connection) }
        }
    }

    private func send(_ payload: UnsafeRawBufferPointer, stream: StreamKind, on connection: MQTTConnection) {
        link.withLock { $0.inFlight += 1 }
        let failure = topics[stream.index].withUnsafeBufferPointer { connection.publish(topic: $0.baseAddress!, payload: payload, qos: settings.qos) }
        if failure == nil {
            metrics.published.increment()
        } else {
            // The connection died between the check and the call: the message is lost, counted.
            link.withLock { $0.inFlight = max(0, $0.inFlight - 1) }
            refused += 1
            metrics.dropped.increment()
        }
    }

    // MARK: MessageSink: what the hub sends, as values (a stream's with its line, published as it is)

    func receive(_ message: AnyServerMessage, line: () -> ByteBuffer?) {
        // A message that cannot be encoded is not published (an empty one would break a batch's array).
        if let stream = message.stream {
            if let line = line() { enqueue(line, of: stream) }
            return
        }
        switch message {
        case .watching(let message):
            watching = Set(message.streams.map(\.stream))
            waiting.subtract(watching)
        case .error(let error):
            // A stream whose sensor is not there (yet): watched again when the devices change.
            guard case .string(let name)? = error.id, let stream = StreamKind(rawValue: name), waiting.insert(stream).inserted else { return }
            logger.notice("MQTT stream waits for its sensor", metadata: ["stream": "\(name)", "reason": "\(error.message)"])
        case .ended(let ended):
            // Subscribers learn it too, on the stream's topic.
            watching.remove(ended.stream)
            if let line = line() { enqueue(line, of: ended.stream) }
        default:
            break  // VERSION; DROPPED never comes: the bridge takes every message at once
        }
    }

    private func enqueue(_ line: ByteBuffer, of stream: StreamKind) {
        // Without the line's newline: an MQTT message is one JSON value.
        let body = line.readableBytesView.last == UInt8(ascii: "\n") ? line.getSlice(at: line.readerIndex, length: line.readableBytes - 1)! : line
        guard settings.batch else { return push(body, of: stream) }
        // Taken out of `batches`: the buffer uniquely referenced while it grows.
        var batch = batches[stream.index].take() ?? ByteBuffer()
        batch.writeInteger(UInt8(ascii: batch.readableBytes == 0 ? "[" : ","))
        batch.writeImmutableBuffer(body)
        batches[stream.index] = batch
    }

    /// Queues a message, counting the one it pushed out of a full queue.
    private func push(_ message: ByteBuffer, of stream: StreamKind) {
        let dropped = queue.totalDropped
        queue.push(message, kind: .stream(stream))
        if queue.totalDropped > dropped { metrics.dropped.increment(by: queue.totalDropped - dropped) }
    }

    /// The end of one delivery: the batches close (in batch mode), and what the broker takes goes.
    func flush() {
        for index in batches.indices {
            guard var batch = batches[index].take() else { continue }
            batch.writeInteger(UInt8(ascii: "]"))
            push(batch, of: StreamKind.allCases[index])
        }
        drain()
    }
}
