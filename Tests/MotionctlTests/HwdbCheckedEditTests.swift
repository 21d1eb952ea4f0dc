import Foundation
import MotionCore
import MotionDevices
@testable import MotionCtlCommands
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 60, defect 12: the mount wizard's hwdb edit is compiled and checked on a copy before it
/// takes the file's place, and what systemd-hwdb says of other files is a warning.
extension CalibrateMountCommand {
    /// Issue 60, defect 12: another package's hwdb file that systemd-hwdb warns about made every run
    /// exit 1, after writing. Its warnings are warnings: the wizard writes its entry, says what
    /// systemd-hwdb said of the other file, and exits 0. Moved from `Hardware.CalibrateMountCommand`
    /// with its suite (issue 61): the wizard runs on testbeds of umockdev-run's (`wizard(on:poses:root:undo:)`).
    @Test func anotherFilesWarningIsAWarning() async throws {
        let root = NSTemporaryDirectory() + "mount-root-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        // Debian 12's systemd-hwdb reads /lib/udev/hwdb.d (UDEVLIBEXECDIR), a merged-/usr one /usr/lib's.
        for directory in ["/lib/udev/hwdb.d", "/usr/lib/udev/hwdb.d"] {
            try FileManager.default.createDirectory(atPath: root + directory, withIntermediateDirectories: true)
            try " ORPHAN=1\n".write(toFile: root + directory + "/70-other.hwdb", atomically: true, encoding: .utf8)
        }
        let chuwi = Self.machines[0]
        let (run, written, _) = try await Self.wizard(on: chuwi, poses: chuwi.poses, root: root)
        #expect(run.status == 0, "\(run.output) \(run.errors)")
        #expect(run.errors.contains("70-other.hwdb:1: Match expected"), "\(run.errors)")
        #expect(written?.contains("ACCEL_MOUNT_MATRIX=\(chuwi.shippedValue)") == true, "\(written ?? "nothing written")")
    }
}

/// The hwdb file's checked edit, fed as the wizard feeds it (the Chuwi's key and the matrix its poses
/// give), with no wizard around it: the key read from a sysfs tree in a temporary directory, no
/// umockdev, so it runs beside the `Hardware` suite; on threads of its own, as it waits on systemd-hwdb.
@Suite(.onOwnThreads) struct HwdbCheckedEdit {
    /// Issue 60, defect 12: the wizard wrote first and checked after. Its local hwdb a link to a file
    /// of the admin's, and a later file of theirs whose record wins for the Chuwi's key: the check
    /// (the hwdb does not give the wizard's matrix for the key) fails, and the file behind the link is
    /// left as it was, the link a link, nothing beside it. Before, the link was followed and its target
    /// left edited.
    @Test func aCheckThatFailsLeavesTheLinkedFileAsItWas() throws {
        let root = NSTemporaryDirectory() + "mount-root-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let directory = root + "/etc/udev/hwdb.d"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/srv", withIntermediateDirectories: true)
        let theirs = "# the admin's\nsensor:modalias:acpi:KIOX000A*:dmi:*:svnA:*\n ACCEL_MOUNT_MATRIX=0, 1, 0; 1, 0, 0; 0, 0, 1\n"
        try theirs.write(toFile: root + "/srv/sensors.hwdb", atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: directory + "/61-sensor-local.hwdb", withDestinationPath: root + "/srv/sensors.hwdb")
        try "sensor:modalias:acpi:BOSC0200*\n ACCEL_MOUNT_MATRIX=1, 0, 0; 0, 1, 0; 0, 0, 1\n".write(toFile: directory + "/99-override.hwdb", atomically: true, encoding: .utf8)
        // The Chuwi's sysfs as its umockdev fixture has it: the parent's modalias and the DMI modalias.
        let chuwi = CalibrateMountCommand.machines[0]
        let sysfs = root + "-sys"
        defer { try? FileManager.default.removeItem(atPath: sysfs) }
        let syspath = sysfs + chuwi.parent + "/iio:device0"
        try FileManager.default.createDirectory(atPath: syspath, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: sysfs + "/class/dmi/id", withIntermediateDirectories: true)
        try (chuwi.parentModalias + "\n").write(toFile: sysfs + chuwi.parent + "/modalias", atomically: true, encoding: .utf8)
        try (try #require(chuwi.dmi) + "\n").write(toFile: sysfs + "/class/dmi/id/modalias", atomically: true, encoding: .utf8)
        // What the wizard installs for the Chuwi's poses: the shipped matrix (`theWizardWritesTheMatrixSystemdShipsUnderTheKeyUdevLooksUp`).
        let record = SensorHwdbRecord(
            key: try SensorHwdbKey.reading(syspath: syspath, sysRoot: sysfs), matrix: Matrix3(rowMajor: chuwi.shipped.map(Double.init)))
        let hwdb = HwdbFile(path: root + CalibrateMount.localHwdb, root: root)
        #expect {
            try hwdb.replace(record.matches[0], with: record.text, expecting: "ACCEL_MOUNT_MATRIX=\(record.matrixValue)")
        } throws: { error in
            "\(error)".contains("the hwdb would not give the entry")
        }
        #expect(try String(contentsOfFile: root + "/srv/sensors.hwdb", encoding: .utf8) == theirs)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: directory + "/61-sensor-local.hwdb") == root + "/srv/sensors.hwdb")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["61-sensor-local.hwdb", "99-override.hwdb"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/srv") == ["sensors.hwdb"])
    }
}

/// The copy of the other hwdb files the wizard checks its edit with.
@Suite struct HwdbCheckCopyTests {
    /// A root with `/usr/lib/udev/hwdb.d/60-sensor.hwdb` holding `text`, and `/lib` a link to `usr/lib`
    /// (merged /usr, as Debian 12 and later install it).
    static func mergedUsrRoot(_ text: String) throws -> String {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("hwdb-root-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root + "/usr/lib/udev/hwdb.d", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/etc/udev/hwdb.d", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: root + "/lib", withDestinationPath: "usr/lib")
        try text.write(toFile: root + "/usr/lib/udev/hwdb.d/60-sensor.hwdb", atomically: true, encoding: .utf8)
        return root
    }

    /// On merged /usr, /lib/udev/hwdb.d and /usr/lib/udev/hwdb.d are one directory: each of its files
    /// was copied twice. It is copied once, and the other directory in the copy leads to it, so the
    /// copy reads alike for a systemd-hwdb that reads /lib/udev (Debian 12's UDEVLIBEXECDIR) and one
    /// that reads /usr/lib/udev; the edit is checked against the shipped record as before.
    @Test func aDirectoryReachedTwiceIsCopiedOnce() throws {
        let shipped = "sensor:modalias:acpi:BOSC0200*:dmi:*:svnA:*\n ACCEL_MOUNT_MATRIX=0, 1, 0; 1, 0, 0; 0, 0, 1\n"
        let root = try Self.mergedUsrRoot(shipped)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let scratch = root + "-scratch"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let hwdb = HwdbFile(path: root + "/etc/udev/hwdb.d/61-sensor-local.hwdb", root: root)
        let copied = try hwdb.copyOthers(into: scratch)
        #expect(copied == shipped.utf8.count, "\(copied) bytes copied of one \(shipped.utf8.count)-byte file")
        for directory in ["/lib/udev/hwdb.d", "/usr/lib/udev/hwdb.d"] {
            #expect(try String(contentsOfFile: scratch + directory + "/60-sensor.hwdb", encoding: .utf8) == shipped, "\(directory)")
        }
        // systemd-hwdb finds the shipped record in the copy: the key gives its matrix beside the edit's line.
        let key = "sensor:modalias:acpi:BOSC0200:BOSC0200::dmi:bvnX:svnA:pnY:"
        try hwdb.replace(key, with: key + "\n ACCEL_LOCATION=display\n", expecting: "ACCEL_MOUNT_MATRIX=0, 1, 0; 1, 0, 0; 0, 0, 1")
    }

    /// Only the edited file was bounded (`HwdbFile.maximumSize`): the others were copied whatever
    /// their size. Past `maximumCopied` in all the check is refused, saying so, with nothing more copied.
    @Test func theCopiesAreBoundedInAll() throws {
        let root = try Self.mergedUsrRoot("")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let scratch = root + "-scratch"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        // Sparse: 68 MB of size on no disk.
        for name in ["70-a.hwdb", "71-b.hwdb"] {
            let path = root + "/usr/lib/udev/hwdb.d/" + name
            #expect(FileManager.default.createFile(atPath: path, contents: nil) && truncate(path, 34_000_000) == 0)
        }
        let hwdb = HwdbFile(path: root + "/etc/udev/hwdb.d/61-sensor-local.hwdb", root: root)
        #expect {
            try hwdb.copyOthers(into: scratch)
        } throws: { error in
            "\(error)".hasPrefix("the hwdb files come to more than 67108864 bytes, the most this command copies to check an edit with, at ")
                && "\(error)".hasSuffix("/usr/lib/udev/hwdb.d/71-b.hwdb")
        }
        let left = (try? FileManager.default.subpathsOfDirectory(atPath: scratch)) ?? []
        #expect(!left.contains { $0.hasSuffix("71-b.hwdb") }, "\(left)")
    }
}
