import MotionWire
import NIOCore

/// A line's size in a queue, bytes: replies differ in size by a thousand times (a STATUS line, a
/// week's HISTORY), so a queue is bounded in bytes as well as in lines.
package protocol QueuedLine: Sendable {
    var queuedBytes: Int { get }
}

extension ByteBuffer: QueuedLine {
    package var queuedBytes: Int { readableBytes }
}

/// A client's bounded queue of outgoing lines.
///
/// A slow reader must never slow the sensors or other clients, nor grow the daemon's memory: when the
/// queue is full, the oldest stream message goes (and is counted per stream, to be announced with a
/// `DROPPED` before that stream's next message). Replies and events are never dropped; if only they
/// fill the queue, `push` reports it, and the server disconnects a client that stays that way.
package struct DeliveryQueue<Line: QueuedLine>: Sendable {
    /// What an entry is, for the drop rule.
    package enum Kind: Sendable, Hashable {
        /// A periodic stream message: may be dropped.
        case stream(StreamKind)
        /// A reply or an event: kept.
        case kept
    }

    let capacity: Int
    private var entries: [(kind: Kind, line: Line)] = []
    private var head = 0
    /// Stream messages dropped and not yet announced, per stream.
    package private(set) var pendingDrops: [StreamKind: Int] = [:]
    /// All stream messages ever dropped.
    package private(set) var totalDropped = 0
    /// The bytes of the lines waiting.
    package private(set) var bytes = 0
    /// Replies and events waiting (lines that are never dropped).
    package private(set) var keptCount = 0

    package init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
        // No storage reserved up front: a client that keeps up holds a line or two at a time, and
        // 1000 clients × `capacity` entries would be megabytes for nothing. The storage grows once
        // to the largest backlog a client has had, and is reused from then on.
    }

    /// Entries waiting.
    package var count: Int { entries.count - head }

    package var isEmpty: Bool { count == 0 }

    /// Queues a line. Returns `false` if the queue is full of lines that may not be dropped (the
    /// line is queued anyway: a reply is never lost).
    @discardableResult
    package mutating func push(_ line: Line, kind: Kind) -> Bool {
        let fits = count < capacity || dropOldestStreamMessage()
        append(kind, line)
        return fits
    }

    /// Takes the oldest line and its kind, with the stream drops to announce before it (if it is a
    /// stream message whose stream lost messages).
    package mutating func pop() -> (line: Line, kind: Kind, droppedBefore: (StreamKind, Int)?)? {
        guard head < entries.count else { return nil }
        let entry = entries[head]
        head += 1
        bytes -= entry.line.queuedBytes
        if case .kept = entry.kind { keptCount -= 1 }
        if head == entries.count {
            entries.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 64 && head * 2 > entries.count {
            entries.removeFirst(head)
            head = 0
        }
        // Drops are rare: the stream is hashed only when there are some (hashing it for every line
        // popped showed in the profile at 1 kHz × 100 clients).
        if !pendingDrops.isEmpty, case .stream(let stream) = entry.kind, let dropped = pendingDrops.removeValue(forKey: stream) {
            return (entry.line, entry.kind, (stream, dropped))
        }
        return (entry.line, entry.kind, nil)
    }

    private mutating func append(_ kind: Kind, _ line: Line) {
        entries.append((kind, line))
        bytes += line.queuedBytes
        if case .kept = kind { keptCount += 1 }
    }

    private mutating func dropOldestStreamMessage() -> Bool {
        guard let index = entries[head...].firstIndex(where: { if case .stream = $0.kind { true } else { false } }),
            case .stream(let stream) = entries[index].kind
        else { return false }
        bytes -= entries.remove(at: index).line.queuedBytes
        pendingDrops[stream, default: 0] += 1
        totalDropped += 1
        return true
    }
}
