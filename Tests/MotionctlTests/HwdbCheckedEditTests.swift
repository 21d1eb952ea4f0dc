import Foundation
import TestSupport
import Testing

/// Issue 60, defect 12: the mount wizard's hwdb edit is compiled and checked on a copy before it
/// takes the file's place, and what systemd-hwdb says of other files is a warning.
extension Hardware.CalibrateMountCommand {
    /// Issue 60, defect 12: the wizard wrote first and checked after. Its local hwdb a link to a file
    /// of the admin's, and a later file of theirs whose record wins for the Chuwi's key: the check
    /// (the hwdb does not give the wizard's matrix for the key) fails, and the file behind the link is
    /// left as it was, the link a link, nothing beside it. Before, the link was followed and its target
    /// left edited.
    @Test func aCheckThatFailsLeavesTheLinkedFileAsItWas() async throws {
        let root = NSTemporaryDirectory() + "mount-root-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let directory = root + "/etc/udev/hwdb.d"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/srv", withIntermediateDirectories: true)
        let theirs = "# the admin's\nsensor:modalias:acpi:KIOX000A*:dmi:*:svnA:*\n ACCEL_MOUNT_MATRIX=0, 1, 0; 1, 0, 0; 0, 0, 1\n"
        try theirs.write(toFile: root + "/srv/sensors.hwdb", atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: directory + "/61-sensor-local.hwdb", withDestinationPath: root + "/srv/sensors.hwdb")
        try "sensor:modalias:acpi:BOSC0200*\n ACCEL_MOUNT_MATRIX=1, 0, 0; 0, 1, 0; 0, 0, 1\n".write(toFile: directory + "/99-override.hwdb", atomically: true, encoding: .utf8)
        let chuwi = Self.machines[0]
        let (run, _, _) = try await Self.wizard(on: chuwi, poses: chuwi.poses, root: root)
        #expect(run.status == 1 && run.errors.contains("the hwdb would not give the entry"), "\(run.output) \(run.errors)")
        #expect(try String(contentsOfFile: root + "/srv/sensors.hwdb", encoding: .utf8) == theirs)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: directory + "/61-sensor-local.hwdb") == root + "/srv/sensors.hwdb")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["61-sensor-local.hwdb", "99-override.hwdb"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/srv") == ["sensors.hwdb"])
    }

    /// Issue 60, defect 12: another package's hwdb file that systemd-hwdb warns about made every run
    /// exit 1, after writing. Its warnings are warnings: the wizard writes its entry, says what
    /// systemd-hwdb said of the other file, and exits 0.
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
