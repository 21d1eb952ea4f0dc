import Logging
import MotionWire
import NIOCore

/// The connected clients' outboxes, and the rules that span them: at most `maximumClients`, writes
/// held during a batch and flushed once per client at its end, a client that stays stuck or floods
/// disconnected with a reason. Confined to the hub's event loop.
final class ClientTable: @unchecked Sendable {
    // @unchecked: confined to the hub's event loop, as the closures it schedules there are.
    typealias ID = ClientOutbox.ID

    /// How long a client may leave replies or events unread, its connection taking nothing, before it
    /// is disconnected.
    static let stuckClientTimeout = TimeAmount.seconds(10)

    let maximumClients: Int
    private let eventLoop: any EventLoop
    private let logger: Logger
    private var nextID = 0
    private(set) var outboxes: [ID: ClientOutbox] = [:]
    /// Clients disconnected for being stuck or flooding.
    private(set) var disconnectedByForce = 0
    /// Stream messages dropped for clients since gone.
    private var droppedByGoneClients = 0
    /// Whether a batch is running: writes wait for its end.
    private var batching = false
    /// Clients with lines queued during the batch (held, not looked up by ID: one lookup per client
    /// per sample showed in the profile at 1 kHz × 100 clients); one removed meanwhile no longer
    /// `awaitsFlush`.
    private var awaitingFlush: [ClientOutbox] = []
    /// Writes the lines of replies and events of the classes it knows, its buffer reused.
    private var lineWriter = LineWriter()

    init(maximumClients: Int, eventLoop: any EventLoop, logger: Logger) {
        self.maximumClients = maximumClients
        self.eventLoop = eventLoop
        self.logger = logger
    }

    var count: Int { outboxes.count }

    /// Stream messages dropped for slow readers, gone ones included.
    var totalDropped: Int { droppedByGoneClients + outboxes.values.reduce(0) { $0 + $1.queue.totalDropped } }

    subscript(id: ID) -> ClientOutbox? { outboxes[id] }

    /// Connections refused since the table was last full: logged at the first, counted after.
    private var refusedWhileFull = 0

    /// Adds a client; `nil` when `maximumClients` are connected already (the refusal is logged once
    /// while the table stays full, so that a flood of connections is not a flood of log lines).
    func add(_ sink: any ClientSink) -> ID? {
        add { ClientOutbox(id: $0, sink: sink) }
    }

    /// Adds an in-process front end, which takes messages as values.
    func add(_ receiver: any MessageSink) -> ID? {
        add { ClientOutbox(id: $0, receiver: receiver) }
    }

    private func add(_ makeOutbox: (ID) -> ClientOutbox) -> ID? {
        guard outboxes.count < maximumClients else {
            if refusedWhileFull == 0 { logger.warning("connection refused: too many clients", metadata: ["limit": "\(maximumClients)"]) }
            refusedWhileFull += 1
            return nil
        }
        if refusedWhileFull > 0 {
            logger.notice("accepting clients again", metadata: ["refused while full": "\(refusedWhileFull)"])
            refusedWhileFull = 0
        }
        nextID += 1
        outboxes[nextID] = makeOutbox(nextID)
        return nextID
    }

    /// Forgets a client whose connection closed.
    func remove(_ id: ID) -> ClientOutbox? {
        guard let outbox = outboxes.removeValue(forKey: id) else { return nil }
        outbox.awaitsFlush = false
        droppedByGoneClients += outbox.queue.totalDropped
        return outbox
    }

    /// Whether requests from `id` are still served (it is connected and not being disconnected).
    func serves(_ id: ID) -> Bool {
        outboxes[id].map { !$0.closing } ?? false
    }

    /// Runs `body` with every client's writes held until it ends, then flushes each client once.
    ///
    /// The requests of one read go through here too: a flush can make NIO read the socket again and
    /// re-enter the connection's handler, which must not happen while it is still framing that read.
    func batch(_ body: () -> Void) {
        let outer = batching
        batching = true
        body()
        batching = outer
        guard !outer else { return }
        while let outbox = awaitingFlush.popLast() {
            guard outbox.awaitsFlush else { continue }
            outbox.awaitsFlush = false
            flush(outbox)
        }
    }

    /// Sends a message that is never dropped (`VERSION`, `ENDED`).
    func send<M: ServerMessage>(_ message: M, to id: ID) {
        if let message = catalogued(message) { send(message, to: id) }
    }

    /// Sends a message, as its case, that is never dropped (an event stream's state).
    func send(_ message: AnyServerMessage, to id: ID) {
        if let outbox = outboxes[id] { deliver(message, to: outbox, kind: .kept) }
    }

    /// Sends a reply, or holds it behind an earlier POLL still waiting for its sensors.
    func reply<M: ServerMessage>(_ message: M, to id: ID) {
        guard let outbox = outboxes[id], !outbox.closing, let message = catalogued(message) else { return }
        if let receiver = outbox.receiver { return receive(message, by: receiver, outbox) }
        guard let line = encode(message) else { return }
        if !outbox.holdsBack(line) { enqueue(line, to: outbox, kind: .kept) }
    }

    /// Fills a reserved reply slot, then sends every reply at the front that is ready.
    func answer<M: ServerMessage>(slot: Int, with message: M, to id: ID) {
        guard let outbox = outboxes[id] else { return }
        let message = catalogued(message)
        if let receiver = outbox.receiver, let message { return receive(message, by: receiver, outbox) }
        for line in outbox.fill(slot: slot, with: message.flatMap(encode)) { enqueue(line, to: outbox, kind: .kept) }
    }

    /// `message` as the value a client is handed; nil, logged, for a type that no list of
    /// `AnyServerMessage`'s classes names (a message the hub cannot send).
    private func catalogued<M: ServerMessage>(_ message: M) -> AnyServerMessage? {
        if let message = AnyServerMessage(message) { return message }
        logger.error("cannot send \(M.className): \(M.self) is in neither AnyServerMessage's stream catalogue nor its replies")
        return nil
    }

    /// Hands `message` to a client: as a value to an in-process front end, else its line (`line`,
    /// or encoded here) to its queue.
    func deliver(
        _ message: @autoclosure () -> AnyServerMessage, line: () -> ByteBuffer? = { nil }, to outbox: ClientOutbox, kind: DeliveryQueue<ByteBuffer>.Kind
    ) {
        if let receiver = outbox.receiver {
            return receive(message(), by: receiver, outbox, line: line)
        }
        guard let line = line() ?? encode(message()) else { return }
        enqueue(line, to: outbox, kind: kind)
    }

    /// An in-process front end takes the message now; its `flush` comes at the end of the batch.
    private func receive(_ message: AnyServerMessage, by receiver: any MessageSink, _ outbox: ClientOutbox, line: () -> ByteBuffer? = { nil }) {
        receiver.receive(message) { line() ?? encode(message) }
        flushOrAwaitBatch(outbox)
    }

    /// Flushes the client now, or at the end of the batch running.
    private func flushOrAwaitBatch(_ outbox: ClientOutbox) {
        guard batching else { return flush(outbox) }
        if !outbox.awaitsFlush {
            outbox.awaitsFlush = true
            awaitingFlush.append(outbox)
        }
    }

    /// A message's protocol line: written by hand for the classes `LineWriter` knows (the per-sample
    /// ones, fast and allocation-free), else by `Wire`.
    func encode(_ message: AnyServerMessage) -> ByteBuffer? {
        if lineWriter.write(message) { return ByteBuffer(bytes: lineWriter.bytes) }
        guard let body = message.message else {
            logger.error("cannot encode \(message): a class this version does not list")
            return nil
        }
        do {
            return ByteBuffer(bytes: try Wire.encode(body))
        } catch {
            logger.error("cannot encode \(type(of: body).className)", metadata: ["error": "\(error)"])
            return nil
        }
    }

    func enqueue(_ line: ByteBuffer, to outbox: ClientOutbox, kind: DeliveryQueue<ByteBuffer>.Kind) {
        guard outbox.push(line, kind: kind) else {
            disconnect(outbox, because: "it is sent more than it reads (\(outbox.queue.count) lines, \(outbox.queue.bytes) bytes queued)")
            return
        }
        flushOrAwaitBatch(outbox)
    }

    /// Writes what the connection takes now; if replies or events are left waiting, makes sure a stuck
    /// check runs.
    private func flush(_ outbox: ClientOutbox) {
        outbox.flush()
        guard outbox.repliesWait, !outbox.stuckCheckScheduled, !outbox.closing else { return }
        // A client that reads nothing more gets nothing more pushed, so the check cannot wait for the
        // next line: it is scheduled, from the first reply left waiting (not from a full queue: 250
        // week-long HISTORY replies fill no queue of lines, and were never checked).
        outbox.stuckCheckScheduled = true
        scheduleStuckCheck(outbox.id, progress: outbox.progress)
    }

    /// In `stuckClientTimeout`: disconnects the client if replies still wait and its connection took
    /// nothing since; checks again later if it took some; ends if nothing waits.
    private func scheduleStuckCheck(_ id: ID, progress: Int) {
        eventLoop.scheduleTask(in: Self.stuckClientTimeout) { [self] in
            guard let outbox = outboxes[id] else { return }
            guard outbox.repliesWait, !outbox.closing else {
                outbox.stuckCheckScheduled = false
                return
            }
            guard outbox.progress == progress else { return scheduleStuckCheck(id, progress: outbox.progress) }
            disconnect(outbox, because: "it has read none of its replies for \(Double(Self.stuckClientTimeout.nanoseconds) / 1e9) s")
        }
    }

    /// Closes a client's connection, saying why in the log.
    func disconnect(_ outbox: ClientOutbox, because reason: String) {
        guard outbox.close() else { return }
        logger.warning("client disconnected", metadata: ["client": "\(outbox.id)", "reason": "\(reason)"])
        disconnectedByForce += 1
    }

    func flush(_ id: ID) {
        if let outbox = outboxes[id] { flush(outbox) }
    }

    /// Flushes each client whose input ended, so that one answered in full is closed.
    func closeAnswered() {
        for outbox in outboxes.values where outbox.closesWhenAnswered { flush(outbox) }
    }

    /// Whether `id` takes requests now: connected, not being disconnected, its queue not congested.
    func acceptsRequests(_ id: ID) -> Bool {
        outboxes[id].map { !$0.closing && !$0.isCongested } ?? false
    }

    /// Stops reading a client's requests while it reads its replies too slowly.
    func pauseReadingIfCongested(_ id: ID) {
        if let outbox = outboxes[id], outbox.pauseIfCongested() {
            logger.debug("client reads its replies slowly: its requests wait", metadata: ["client": "\(id)"])
        }
    }
}
