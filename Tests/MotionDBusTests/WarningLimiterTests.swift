import Logging
import Synchronization
import Testing

@testable import MotionDBus

/// The warnings a bus peer can provoke at will: a few a minute per message, then a count of the rest
/// (issue 60, 14d).
@Suite struct WarningLimiterTests {
    /// Each warning logged: its message, and its `suppressed` metadata after a space if it has one.
    final class Said: Sendable {
        private let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
        var logger: Logger {
            struct Handler: LogHandler {
                let said: Said
                var logLevel = Logger.Level.trace
                var metadata: Logger.Metadata = [:]
                subscript(metadataKey key: String) -> Logger.Metadata.Value? { get { metadata[key] } set { metadata[key] = newValue } }
                func log(event: LogEvent) {
                    let line = "\(event.message)" + (event.metadata?["suppressed"].map { " \($0)" } ?? "")
                    said.lines.withLock { $0.append(line) }
                }
            }
            return Logger(label: "test") { _ in Handler(said: self) }
        }
    }

    /// 1,000 of one message within a minute: 3 logged; another message still gets its own 3; the
    /// first after the minute is logged with the count of those left out; `flush` says the count of a
    /// window not yet said.
    @Test func threeAMinuteThenTheCountOfTheRest() {
        let said = Said()
        var limiter = WarningLimiter(logger: said.logger)
        let second: Int64 = 1_000_000_000
        for i in 0..<1000 { limiter.warning("flooded", now: Int64(i) * second / 100) }
        limiter.warning("other", now: 5 * second)
        #expect(said.all == ["flooded", "flooded", "flooded", "other"])
        limiter.warning("flooded", now: 61 * second)
        #expect(said.all.last == "flooded 997 more in the minute before")
        limiter.warning("other", now: 62 * second)
        limiter.flush()
        #expect(said.all.count == 6, "nothing left out of other's window, none of flooded's new one: \(said.all)")
        for i in 0..<10 { limiter.warning("again", now: Int64(i) * second) }
        limiter.flush()
        #expect(said.all.last == "again: 7 more in the last minute, not logged one by one", "\(said.all)")
    }
}
