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

/// A front end in the daemon's own process (the D-Bus bridge, the MQTT bridge, the DSU server): it
/// takes every message as a value, at once, with no queue, and never parses a line.
package protocol MessageSink: AnyObject {
    /// One message for the client, on the hub's loop. `line` gives its protocol line, built at most
    /// once and shared with every client that writes JSON (the MQTT bridge publishes it); `nil` for
    /// one that cannot be encoded (a value JSON has no number for), which the hub logged.
    func receive(_ message: AnyServerMessage, line: () -> ByteBuffer?)
    /// The end of one delivery (a sample's fan-out, a read of requests): what batches sends now.
    func flush()
}

extension MessageSink {
    package func flush() {}
}

/// One client's outgoing side: its bounded queue of lines, its replies in request order, and the
/// state of its connection's life (paused, closing once answered, closing).
package final class ClientOutbox {
    // A class, not a struct: the hot path mutates the queue in place, and a struct in a dictionary
    // gets copied (and its queue's storage with it) by the lookups around a mutation.
    package typealias ID = Int

    /// Lines a client's queue holds before stream messages are dropped.
    static let capacity = 256
    /// Bytes queued at which the client's requests wait (its reading paused, and the rest of a read
    /// left unanswered until the queue drains): replies are never dropped and differ in size by a
    /// thousand times (a week's HISTORY of activities is 79 KB), so 256 lines alone let 40 clients
    /// that read nothing hold 790 MB.
    static let byteCapacity = 256 * 1024
    /// Lines or bytes queued at which a client is disconnected: its requests wait at `capacity` and
    /// `byteCapacity`, so only a flood of events to a client that reads nothing gets this far.
    static let floodLimit = capacity * 4
    static let floodBytes = byteCapacity * 4

    let id: ID
    /// Its connection; nil for an in-process front end, which takes values at once (`receiver`), so
    /// that nothing is ever queued for it and nothing waits.
    let sink: (any ClientSink)?
    let receiver: (any MessageSink)?
    private(set) var queue = DeliveryQueue<ByteBuffer>(capacity: ClientOutbox.capacity)
    /// Counts the flushes that wrote something: the stuck check compares it with what it was when
    /// the check was scheduled (a counter, not a clock read per line on the stream path).
    private(set) var progress = 0
    var stuckCheckScheduled = false
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
    var waitingPolls = 0

    init(id: ID, sink: any ClientSink) {
        (self.id, self.sink, receiver) = (id, sink, nil)
    }

    init(id: ID, receiver: any MessageSink) {
        (self.id, sink, self.receiver) = (id, nil, receiver)
    }

    /// Queues a line; returns `false` when the queue now holds `floodLimit` lines or `floodBytes`
    /// bytes: the client must go.
    func push(_ line: ByteBuffer, kind: DeliveryQueue<ByteBuffer>.Kind) -> Bool {
        queue.push(line, kind: kind)
        if queue.bytes >= Self.byteCapacity { heldManyBytes = true }
        return queue.count < Self.floodLimit && queue.bytes < Self.floodBytes
    }

    /// Whether its queue ever held `byteCapacity` bytes: once it is gone, the heap has that much free.
    private(set) var heldManyBytes = false

    /// Whether its queue holds `capacity` lines or `byteCapacity` bytes: its requests wait.
    var isCongested: Bool { queue.count >= Self.capacity || queue.bytes >= Self.byteCapacity }

    /// Whether replies or events wait that its connection has not taken.
    var repliesWait: Bool { queue.keptCount > 0 }

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
        if let receiver { return receiver.flush() }
        guard let sink else { return }
        var wrote = false
        // The queue first: asking the connection whether it takes more (NIO's channel, through two
        // existentials) once more after the last line, per client per sample, showed in the profile.
        while !queue.isEmpty, sink.isWritable, let (line, _, dropped) = queue.pop() {
            if let (stream, count) = dropped, let bytes = try? Wire.encode(Dropped(stream: stream, count: count)) {
                sink.write(ByteBuffer(bytes: bytes))
            }
            sink.write(line)
            wrote = true
        }
        if wrote {
            sink.flush()
            progress &+= 1
        }
        if closesWhenAnswered, !closing, queue.isEmpty, waitingPolls == 0 {
            closing = true
            sink.closeAfterWrites()
        }
        if paused && queue.count < Self.capacity / 2 && queue.bytes < Self.byteCapacity / 2 {
            paused = false
            sink.setReading(true)
        }
    }

    /// Stops reading its requests while its queue is full (the kernel's socket buffer then holds the
    /// sender back). Returns whether it paused now.
    func pauseIfCongested() -> Bool {
        guard !paused, isCongested else { return false }
        paused = true
        sink?.setReading(false)
        return true
    }

    /// Closes the connection; nothing more is sent. Returns `false` if it was closing already.
    func close() -> Bool {
        guard !closing else { return false }
        closing = true
        sink?.close()
        return true
    }
}
