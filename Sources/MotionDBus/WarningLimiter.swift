import Logging
import MotionSystem

/// Warnings that a peer on the bus can provoke at will (a flood of signals), let through at most
/// `limit` times a `window` for each message; the rest are counted, and the count said with the next
/// one let through, or by `flush` (issue 60, 14d: 3,600–6,400 a second reached the journal). One
/// thread's own (the bus thread's).
struct WarningLimiter {
    /// Warnings of one message let through per window.
    static let limit = 3
    /// The window, ns (a minute).
    static let window: Int64 = 60_000_000_000

    private let logger: Logger
    /// Per message: when its window began (monotonic ns), how many were let through and left out in it.
    private var counts: [String: (start: Int64, logged: Int, suppressed: Int)] = [:]

    init(logger: Logger) {
        self.logger = logger
    }

    /// Logs `message` as a warning unless `limit` of it were logged in this window; `now` is the
    /// monotonic clock, ns.
    mutating func warning(_ message: String, metadata: Logger.Metadata = [:], now: Int64 = Syscall.monotonicNanoseconds()) {
        var count = counts[message] ?? (now, 0, 0)
        var metadata = metadata
        if now - count.start >= Self.window {
            if count.suppressed > 0 { metadata["suppressed"] = "\(count.suppressed) more in the minute before" }
            count = (now, 0, 0)
        }
        if count.logged < Self.limit {
            count.logged += 1
            logger.warning("\(message)", metadata: metadata)
        } else {
            count.suppressed += 1
        }
        counts[message] = count
    }

    /// Says how many of each message were left out in its window and not yet said (at the end).
    mutating func flush() {
        for (message, count) in counts where count.suppressed > 0 {
            logger.warning("\(message): \(count.suppressed) more in the last minute, not logged one by one")
        }
        counts = [:]
    }
}
