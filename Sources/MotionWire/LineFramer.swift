/// Splits a byte stream into lines of at most `maximumLength` bytes (`\n` included).
///
/// A longer line is reported once as `.tooLong` and skipped up to its `\n`, so one bad line costs
/// neither the connection nor unbounded memory. A `\r` before the `\n` is dropped.
public struct LineFramer: Sendable {
    /// What the framer found.
    public enum Item: Sendable, Hashable {
        /// A complete line, without its `\n`.
        case line([UInt8])
        /// A line longer than the limit (its bytes are discarded).
        case tooLong
    }

    /// The longest line accepted, bytes including `\n`.
    public let maximumLength: Int
    private var pending: [UInt8] = []
    private var skipping = false

    /// Creates a framer for lines of at most `maximumLength` bytes.
    public init(maximumLength: Int = ProtocolVersion.maximumLineLength) {
        self.maximumLength = maximumLength
        pending.reserveCapacity(maximumLength)
    }

    /// Feeds bytes and hands each item they complete to `body`, in order, as it is found.
    ///
    /// Nothing is collected: a read full of short lines costs one small array per line, given away
    /// at once, and `pending`'s reserved storage stays the only buffer (a line handed out is a copy
    /// of its own length, so clearing `pending` never reallocates it).
    public mutating func feed<Bytes: Collection>(_ bytes: Bytes, _ body: (Item) -> Void) where Bytes.Element == UInt8 {
        feed(bytes) { item in
            body(item)
            return true
        }
    }

    /// Feeds bytes and hands each item they complete to `body` until it returns `false`; returns how
    /// many bytes were taken. The rest is the caller's to feed later: a server whose client reads
    /// its replies slowly stops at a request, not at the end of a read of thousands.
    @discardableResult
    public mutating func feed<Bytes: Collection>(_ bytes: Bytes, while body: (Item) -> Bool) -> Int where Bytes.Element == UInt8 {
        var taken = 0
        for byte in bytes {
            taken += 1
            if byte == UInt8(ascii: "\n") {
                var goOn = true
                if skipping {
                    skipping = false
                } else {
                    if pending.last == UInt8(ascii: "\r") { pending.removeLast() }
                    goOn = body(.line(pending.withUnsafeBufferPointer { Array($0) }))  // a copy, not a share of `pending`
                }
                pending.removeAll(keepingCapacity: true)
                if !goOn { return taken }
                continue
            }
            if skipping { continue }
            if pending.count + 1 >= maximumLength {
                // This byte and the `\n` still to come would pass the limit.
                skipping = true
                pending.removeAll(keepingCapacity: true)
                if !body(.tooLong) { return taken }
                continue
            }
            pending.append(byte)
        }
        return taken
    }

    /// Feeds bytes; returns the items they complete, in order (for callers that read a little at a
    /// time; a server reading untrusted input uses `feed(_:_:)`).
    public mutating func feed<Bytes: Collection>(_ bytes: Bytes) -> [Item] where Bytes.Element == UInt8 {
        var items: [Item] = []
        feed(bytes) { items.append($0) }
        return items
    }
}
