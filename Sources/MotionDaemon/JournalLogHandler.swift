import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Writes log lines to standard error with the `<N>` priority prefixes journald reads (sd-daemon(3)),
/// so that `journalctl -p warning` works for the service. swift-log has no such handler; this one is a
/// few lines.
public struct JournalLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    private let label: String
    private let level: LogLevelSetting

    /// A handler for `label` whose level is `level`'s, now and after it changes (a reload).
    public init(label: String, level: LogLevelSetting) {
        self.label = label
        self.level = level
    }

    public var logLevel: Logger.Level {
        get { level.value }
        set { level.value = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let priority = switch event.level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
        var fields = metadata
        if let extra = event.metadata { fields.merge(extra) { _, new in new } }
        let details = fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let line = "<\(priority)>\(event.message)\(details.isEmpty ? "" : " " + details)\n"
        let bytes = Array(line.utf8)
        _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }  // one write: lines don't interleave
    }
}

/// The log level of every `JournalLogHandler` made with it, changeable while the daemon runs.
public final class LogLevelSetting: Sendable {
    private let level: Mutex<Logger.Level>

    /// Starts at `level`.
    public init(_ level: Logger.Level) { self.level = Mutex(level) }

    /// The current level.
    public var value: Logger.Level {
        get { level.withLock { $0 } }
        set { level.withLock { $0 = newValue } }
    }
}
