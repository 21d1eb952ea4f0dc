import MotionWire
import NIOCore

/// Where a client's lines go: its connection. The daemon's is its NIO channel (`ChannelSink`); the
/// core's tests give their own, so the delivery rules are tested without sockets.
package protocol ClientSink: AnyObject {
    /// Whether the connection takes more now; when it does again, the owner calls `ClientTable.flush`.
    var isWritable: Bool { get }
    /// Queues bytes for the connection (sent at `flush`).
    func write(_ line: ByteBuffer)
    /// Sends what was written.
    func flush()
    /// Closes once everything written so far has gone out.
    func closeAfterWrites()
    /// Closes at the event loop's next turn (not from inside the handler that is reading its input).
    func close()
    /// Starts or stops reading the client's requests.
    func setReading(_ reading: Bool)
}

/// A client that takes the `motion` stream as values rather than lines: a front end that re-encodes
/// every sample (the DSU server, at the IMU's rate) is spared the JSON both ways. Everything else it
/// watches, and every reply, still reaches its `ClientSink` as lines.
package protocol MotionReceiver: AnyObject {
    /// One `MOTION` the client's watch is due, on the hub's loop.
    func receive(_ motion: MotionMessage)
}

/// One client's outgoing side: its bounded queue of lines, its replies in request order, and the
/// state of its connection's life (paused, closing once answered, closing).
package final class ClientOutbox {
    // A class, not a struct: the hot path mutates the queue in place, and a struct in a dictionary
    // gets copied (and its queue's storage with it) by the lookups around a mutation.
    package typealias ID = Int

    /// Lines a client's queue holds before stream messages are dropped.
    static let capacity = 256
    /// Lines queued at which a client that asks faster than it reads is disconnected: replies are
    /// never dropped, so this bounds one client's memory.
    static let floodLimit = capacity * 4

    let id: ID
    let sink: any ClientSink
    /// Where its `motion` samples go instead of its queue, if anywhere.
    let motionReceiver: (any MotionReceiver)?
    private(set) var queue = DeliveryQueue<ByteBuffer>(capacity: ClientOutbox.capacity)
    /// Since when its queue has been full of lines that may not be dropped.
    var fullSince: NIODeadline?
    /// Whether reading its requests is paused until its queue drains.
    private(set) var paused = false
    /// Whether it waits for the end of a `ClientTable.batch` to be flushed.
    var awaitsFlush = false
    /// Whether its input has ended: it is closed once all it asked for is answered.
    var closesWhenAnswered = false
    /// Whether its connection is being closed: it is sent nothing more.
    private(set) var closing = false
    /// Replies held back behind a POLL that waits for its sensors, so that replies keep the order of
    /// the requests: each a slot number and its line once there is one (`nil`: still waiting).
    private var replySlots: [(slot: Int, line: ByteBuffer?)] = []
    private var nextSlot = 0
    /// Its POLLs waiting for their sensors.
    var waitingPolls = 0

    init(id: ID, sink: any ClientSink, motionReceiver: (any MotionReceiver)? = nil) {
        self.id = id
        self.sink = sink
        self.motionReceiver = motionReceiver
    }

    /// What `push` found.
    enum Congestion {
        /// The line is queued (or, for a stream line, an older one was dropped for it).
        case none
        /// The queue is full of lines that may not be dropped, newly so.
        case becameStuck
        /// The queue holds `floodLimit` lines: the client must go.
        case flooded
    }

    /// Queues a line at time `now` (the event loop's; read only if the queue became stuck: a clock read
    /// per line showed in the profile at 1 kHz × 100 clients).
    func push(_ line: ByteBuffer, kind: DeliveryQueue<ByteBuffer>.Kind, now: @autoclosure () -> NIODeadline) -> Congestion {
        if queue.push(line, kind: kind) {
            fullSince = nil
            return .none
        }
        if queue.count >= Self.floodLimit { return .flooded }
        guard fullSince == nil else { return .none }
        fullSince = now()
        return .becameStuck
    }

    /// Queues a reply in request order: at once, or behind replies still being waited for. Returns
    /// whether it was held back.
    func holdsBack(_ reply: ByteBuffer) -> Bool {
        guard !replySlots.isEmpty else { return false }
        replySlots.append((0, reply))
        return true
    }

    /// A place for a reply that comes later; replies to later requests wait behind it.
    func reserveReplySlot() -> Int {
        nextSlot += 1
        replySlots.append((nextSlot, nil))
        return nextSlot
    }

    /// Fills `slot` with its reply (`nil`: none can be made; the replies behind it must not wait for
    /// ever), and returns the replies at the front that are ready to go, in order.
    func fill(slot: Int, with reply: ByteBuffer?) -> [ByteBuffer] {
        guard let index = replySlots.firstIndex(where: { $0.slot == slot }) else { return [] }
        if let reply { replySlots[index].line = reply } else { replySlots.remove(at: index) }
        var ready: [ByteBuffer] = []
        while let first = replySlots.first, let line = first.line {
            replySlots.removeFirst()
            ready.append(line)
        }
        return ready
    }

    /// Writes what the connection takes now; the rest waits for writability. Closes the connection
    /// once a client whose input ended has all its answers, and reads again once the queue drained.
    func flush() {
        var wrote = false
        while sink.isWritable, let (line, _, dropped) = queue.pop() {
            if let (stream, count) = dropped, let bytes = try? Wire.encode(Dropped(stream: stream, count: count)) {
                sink.write(ByteBuffer(bytes: bytes))
            }
            sink.write(line)
            wrote = true
        }
        if wrote { sink.flush() }
        // It reads again: the stuck-client check scheduled when its queue filled finds nothing to do.
        if queue.count < Self.capacity { fullSince = nil }
        if closesWhenAnswered, !closing, queue.isEmpty, waitingPolls == 0 {
            closing = true
            sink.closeAfterWrites()
        }
        if paused && queue.count < Self.capacity / 2 {
            paused = false
            sink.setReading(true)
        }
    }

    /// Stops reading its requests while its queue is full (the kernel's socket buffer then holds the
    /// sender back). Returns whether it paused now.
    func pauseIfCongested() -> Bool {
        guard !paused, queue.count >= Self.capacity else { return false }
        paused = true
        sink.setReading(false)
        return true
    }

    /// Closes the connection; nothing more is sent. Returns `false` if it was closing already.
    func close() -> Bool {
        guard !closing else { return false }
        closing = true
        sink.close()
        return true
    }
}
