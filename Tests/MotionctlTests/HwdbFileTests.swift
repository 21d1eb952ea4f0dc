import Foundation
@testable import MotionCtlCommands
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The local hwdb as the mount wizard edits it: its own records after their markers replaced and
/// removed, the owner's left as they were, whatever separates them.
@Suite struct HwdbFileTests {
    /// The owner's records, the second after a line of spaces and with CRLF line ends (edited on
    /// another system): an earlier run's record for a key is replaced by a later run's, which
    /// `--undo` removes, and the owner's lines are kept byte for byte (a blank line between records
    /// becomes empty). Split on empty lines alone, a line of spaces after the wizard's record made the
    /// owner's next record part of it, removed with it.
    @Test func theWizardsRecordIsReplacedAndRemovedAndTheOwnersLinesStay() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hwdb-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/61-sensor-local.hwdb"
        let first = "# Mine\nsensor:modalias:acpi:KIOX000A*:dmi:*:svnA:*\n ACCEL_MOUNT_MATRIX=0, 1, 0; 1, 0, 0; 0, 0, 1"
        let second = "sensor:modalias:acpi:BOSC0200*:dmi:*:svnB:*\r\n ACCEL_MOUNT_MATRIX=-1, 0, 0; 0, 1, 0; 0, 0, 1\r"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let key = "sensor:modalias:acpi:SMO8500:SMO8500::dmi:bvnLENOVO:pnX:"
        // An earlier run's record between the owner's, a line of spaces after it.
        let earlier = HwdbFile.marker(key) + "\n" + key + "\n ACCEL_MOUNT_MATRIX=1, 0, 0; 0, 1, 0; 0, 0, 1\n"
        try (first + "\n\n" + earlier + "   \n" + second + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let file = HwdbFile(path: path, root: directory)
        #expect(try file.replace(key, with: key + "\n ACCEL_MOUNT_MATRIX=-1, 0, 0; 0, -1, 0; 0, 0, 1\n"))
        let written = try String(contentsOfFile: path, encoding: .utf8)
        #expect(written == first + "\n\n" + second + "\n\n" + HwdbFile.marker(key) + "\n" + key + "\n ACCEL_MOUNT_MATRIX=-1, 0, 0; 0, -1, 0; 0, 0, 1\n", "\(written.debugDescription)")
        #expect(try file.replace(key, with: nil))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == first + "\n\n" + second + "\n")
        #expect(try !file.replace(key, with: nil))
    }

    /// Issue 60, defect 14: a 100 MB hwdb file took 442 MB of memory in the wizard (read whole, as
    /// text, then split). It is refused by its size, unread and unchanged.
    @Test func aHwdbFileLargerThanAnyOfSystemdsIsRefusedUnread() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hwdb-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/61-sensor-local.hwdb"
        #expect(FileManager.default.createFile(atPath: path, contents: nil) && truncate(path, 100_000_000) == 0)
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let peakBefore = usage.ru_maxrss  // kB
        #expect {
            try HwdbFile(path: path, root: directory).replace("sensor:modalias:x:", with: "sensor:modalias:x:\n ACCEL_MOUNT_MATRIX=1, 0, 0; 0, 1, 0; 0, 0, 1\n")
        } throws: { "\($0)" == "\(path) is 100000000 bytes, more than the 1048576 this command edits" }
        getrusage(RUSAGE_SELF.rawValue, &usage)
        #expect(usage.ru_maxrss - peakBefore < 20_000, "the peak grew by \(usage.ru_maxrss - peakBefore) kB")
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int == 100_000_000)
    }

    /// Issue 60, defect 14: a FIFO in the hwdb file's place was refused as "Permission denied". It is
    /// named for what it is, and never opened (opened, a FIFO with no writer blocks the open).
    @Test func aFIFOIsRefusedAsNotARegularFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hwdb-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/61-sensor-local.hwdb"
        #expect(mkfifo(path, 0o644) == 0)
        #expect {
            try HwdbFile(path: path, root: directory).replace("sensor:modalias:x:", with: nil)
        } throws: { "\($0)" == "\(path) is a FIFO, not a regular file" }
    }
}
