import Logging
import Testing

@testable import MotionDaemon

@Suite struct JournalLogHandlerTests {
    /// journald makes each line on standard error an entry of its own: a message or value with a
    /// line break (a YAML error with its context, a device's odd `name`) used to become several
    /// entries, the later ones without a priority. Every entry is now exactly one line.
    @Test func anEntryIsOneLineWhateverItsMessageAndValuesHold() {
        let line = JournalLogHandler.line(
            level: .warning, message: "cannot parse\nline 2:\tx", metadata: ["name": "bad\r\nname\u{1B}", "device": "iio:device0"])
        #expect(line == "<4>cannot parse\\nline 2:\\tx device=iio:device0 name=bad\\r\\nname\\x1b\n")
        #expect(line.filter { $0 == "\n" }.count == 1)
        #expect(JournalLogHandler.line(level: .info, message: "plain", metadata: [:]) == "<6>plain\n")
    }
}
