import Foundation
import Logging
import MotionSystem
import TestSupport
import Testing

@testable import MotionDaemon

@Suite(.onOwnThreads) struct JournalLogHandlerTests {
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

    /// As a service, entries go to the journal natively: each metadata key a field of its own
    /// (journal field names are upper-case letters, digits and `_`, not starting with `_`, which is
    /// systemd's own: systemd.journal-fields(7)), beside `MESSAGE`, `PRIORITY` and `SYSLOG_IDENTIFIER`.
    @Test func aNativeEntryCarriesEachMetadataKeyAsAField() {
        let entry = JournalLogHandler.entry(
            level: .notice, message: "sensor opened",
            metadata: ["device": "iio:device0", "rate-hz": "25", "_private": "x", "2d": "y", String(repeating: "k", count: 70): "z"])
        let fields = String(decoding: entry, as: UTF8.self).split(separator: "\0").map(String.init)
        #expect(fields == [
            "MESSAGE=sensor opened 2d=y _private=x device=iio:device0 \(String(repeating: "k", count: 70))=z rate-hz=25", "PRIORITY=5",
            "SYSLOG_IDENTIFIER=motiond", "D=y", "PRIVATE=x", "DEVICE=iio:device0", String(repeating: "K", count: 64) + "=z", "RATE_HZ=25",
        ])
    }

    /// An entry libsystemd refuses (a field without `=`, which `entry` never makes) is written as the
    /// line journald reads from the stream, its priority first: not lost. (A journal that is not there
    /// at all, libsystemd passes over in silence: sd_journal_sendv returns 0 on ENOENT.)
    @Test func anEntryTheJournalRefusesIsWrittenAsALine() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        let writer = LogWriter(descriptor: ends[1], toJournal: true)
        writer.write(JournalLogHandler.entry(level: .warning, message: "sensor read failed", metadata: ["device": "iio:device0"]) + Array("\0NOT A FIELD".utf8))
        writer.flush()
        var buffer = [UInt8](repeating: 0, count: 256)
        var reader = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
        try #require(poll(&reader, 1, 5000) == 1, "nothing written")
        let n = read(ends[0], &buffer, buffer.count)
        #expect(String(decoding: buffer[0..<max(n, 0)], as: UTF8.self) == "<4>sensor read failed device=iio:device0\n")
    }

    /// systemd says which stream is the journal's by `$JOURNAL_STREAM` (device:inode); another
    /// descriptor, or none named, is not.
    @Test func theJournalStreamIsTheDescriptorJournalStreamNames() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        var status = stat()
        #expect(fstat(ends[1], &status) == 0)
        // The environment is the whole process's: changed under the lock whoever starts a program holds.
        environmentLock.withLock { _ = setenv("JOURNAL_STREAM", "\(status.st_dev):\(status.st_ino)", 1) }
        defer { environmentLock.withLock { _ = unsetenv("JOURNAL_STREAM") } }
        #expect(Journal.isJournalStream(ends[1]))
        #expect(!Journal.isJournalStream(STDIN_FILENO))
        environmentLock.withLock { _ = unsetenv("JOURNAL_STREAM") }
        #expect(!Journal.isJournalStream(ends[1]))
    }
}

/// A log whose reader stalls must not stall the daemon: the event loop logs, and a blocking write to
/// a full pipe would stop it for as long as nobody reads.
@Suite struct LogWriterTests {
    @Test func loggingIntoAPipeNobodyReadsReturnsAndSaysWhatItDroppedOnceRead() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        let writer = LogWriter(descriptor: ends[1])
        let line = Array(String(repeating: "x", count: 1023).utf8) + [UInt8(ascii: "\n")]
        // 64 KiB of pipe hold 64 lines; the writer's queue 1024 more; the rest are dropped. Were any
        // call to wait for the reader, this loop would never end.
        for _ in 0..<5000 { writer.write(line) }
        var pending = ""
        var written = 0, dropped = 0
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var reader = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
        while written + dropped < 5000 {
            guard poll(&reader, 1, 5000) > 0 else {
                Issue.record("lost: \(written) written and \(dropped) said dropped of 5000")
                return
            }
            let n = read(ends[0], &buffer, buffer.count)
            pending += String(decoding: buffer[0..<max(n, 0)], as: UTF8.self)
            while let newline = pending.firstIndex(of: "\n") {
                let line = pending[..<newline]
                if line.hasPrefix("xxx") { written += 1 }
                if line.contains("log lines dropped") { dropped += Int(line.dropFirst(3).prefix { $0.isNumber })! }
                pending = String(pending[pending.index(after: newline)...])
            }
        }
        #expect(written + dropped == 5000, "every line written or counted: \(written) written, \(dropped) dropped")
        #expect(dropped > 0)
    }
}
