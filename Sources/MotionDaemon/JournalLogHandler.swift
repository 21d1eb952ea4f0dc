import Logging
import Synchronization

/// Writes log lines to standard error with the `<N>` priority prefixes journald reads (sd-daemon(3)),
/// so that `journalctl -p warning` works for the service. swift-log has no such handler; this one is a
/// few lines.
public struct JournalLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    private let level: LogLevelSetting
    private let writer: LogWriter

    /// A handler for `label` (not written: every entry is motiond's) whose level is `level`'s, now and
    /// after it changes (a reload), writing through `writer` (standard error by default).
    public init(label: String, level: LogLevelSetting, writer: LogWriter = .standardError) {
        self.level = level
        self.writer = writer
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
        var fields = metadata
        if let extra = event.metadata { fields.merge(extra) { _, new in new } }
        if writer.writesToJournal {
            writer.write(Self.entry(level: event.level, message: "\(event.message)", metadata: fields))
        } else {
            writer.write(Array(Self.line(level: event.level, message: "\(event.message)", metadata: fields).utf8))
        }
    }

    /// One native journal entry, its fields separated by NUL bytes (`LogWriter.writesToJournal`):
    /// `MESSAGE` (with the metadata appended as in `line`, for `journalctl`'s plain view), `PRIORITY`,
    /// `SYSLOG_IDENTIFIER`, and each metadata key as a field of its own, upper-cased, other characters
    /// than letters, digits and `_` made `_` (`device` → `DEVICE=iio:device0`), as journald takes
    /// them (systemd.journal-fields(7)): beginning with a letter, at most 64 characters. One name it
    /// would refuse would lose the whole entry's fields.
    static func entry(level: Logger.Level, message: String, metadata: Logger.Metadata) -> [UInt8] {
        var line = Self.line(level: level, message: message, metadata: metadata)
        let priority = line.dropFirst().prefix { $0 != ">" }
        line = String(line.drop { $0 != ">" }.dropFirst().dropLast())  // no <N>, no newline
        var fields = ["MESSAGE=\(line)", "PRIORITY=\(priority)", "SYSLOG_IDENTIFIER=motiond"]
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            let name = String(key.uppercased().map { $0.isASCII && ($0.isLetter || $0.isNumber) ? $0 : "_" }.drop { !$0.isLetter }.prefix(64))
            guard !name.isEmpty else { continue }
            fields.append("\(name)=\(String("\(value)".filter { $0 != "\0" }))")
        }
        return Array(fields.joined(separator: "\0").utf8)
    }

    /// One journal entry: `<priority>message key=value …` and a single `\n`. Line breaks and other
    /// control characters inside the message or a value are escaped (`\n`), because journald makes
    /// each line an entry of its own, the second one without its priority.
    static func line(level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        let priority = switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
        let details = metadata.sorted { $0.key < $1.key }.map { "\(escaped($0.key))=\(escaped("\($0.value)"))" }.joined(separator: " ")
        return "<\(priority)>\(escaped(message))\(details.isEmpty ? "" : " " + details)\n"
    }

    private static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { return text }
        return text.unicodeScalars.map { scalar in
            switch scalar {
            case "\n": "\\n"
            case "\t": "\\t"
            case "\r": "\\r"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: "\\x" + String(scalar.value, radix: 16)
            default: String(scalar)
            }
        }.joined()
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
