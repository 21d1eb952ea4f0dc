import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

extension Hardware {
    /// `motionctl calibrate mount` on a fake Chuwi Hi10 Pro (a BOSC0200 bmc150, its DMI as the kernel
    /// writes it, no matrix from udev yet), the poses made by the fixture's raw counts (256 = 1 g).
    /// Systemd's 60-sensor.hwdb ships `0, -1, 0; -1, 0, 0; 0, 0, 1` for this machine (line 298); by
    /// iio-sensor-proxy's convention (upright reads (0, −1 g, 0) after the matrix) its chip reads
    /// (1 g, 0, 0) upright, (0, 1 g, 0) on its right edge and (0, 0, −1 g) screen up.
    @Suite struct CalibrateMountCommand {
        /// Holds each pose for `seconds`, one after the other, on a thread of its own.
        static func makePoses(_ poses: [[Int]], on testbed: Testbed, seconds: Double) -> Thread {
            let file = testbed.root + "/sys/bus/iio/devices/iio:device0/in_accel_"
            let thread = Thread {
                for pose in poses {
                    for (axis, counts) in zip(["x", "y", "z"], pose) {
                        try? "\(counts)\n".write(toFile: file + axis + "_raw", atomically: false, encoding: .utf8)
                    }
                    Thread.sleep(forTimeInterval: seconds)
                }
            }
            thread.start()
            return thread
        }

        /// Runs the wizard with the poses made; then, if `undo`, `--undo` (the daemon still running).
        /// `written`: the local hwdb file between the two.
        static func wizard(poses: [[Int]], root: String, undo: Bool = false) async throws -> (run: ProgramRun, written: String?, undo: ProgramRun?) {
            let testbed = try Testbed()
            try testbed.add(fixture: "tablet-chuwi-hi10-pro")
            let socket = NSTemporaryDirectory() + "mount-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
            let daemon = try DaemonProcess(socket: socket)
            defer { _ = daemon.secondsToExit(after: SIGTERM) }
            _ = makePoses(poses, on: testbed, seconds: 2.5)
            let motionctl = ReplayDaemon.products.appendingPathComponent("motionctl").path
            let arguments = ["calibrate", "mount", "--socket", socket, "--root", root]
            let run = try await runProgram(motionctl, arguments + ["--hold", "0.5", "--timeout", "15"])
            let written = try? String(contentsOfFile: root + "/etc/udev/hwdb.d/61-sensor-local.hwdb", encoding: .utf8)
            return (run, written, undo ? try await runProgram(motionctl, arguments + ["--undo"]) : nil)
        }

        /// The three poses give the shipped matrix; the entry is written where udev reads it, under
        /// the key the shipped record matches, compiled by the real systemd-hwdb, and found by it;
        /// `--undo` removes it again.
        @Test func theWizardWritesTheMatrixSystemdShipsForThisMachine() async throws {
            let root = NSTemporaryDirectory() + "mount-root-\(UInt32.random(in: 0...UInt32.max))"
            defer { try? FileManager.default.removeItem(atPath: root) }
            let (run, written, undo) = try await Self.wizard(poses: [[256, 0, 0], [0, 256, 0], [0, 0, -256]], root: root, undo: true)
            #expect(run.status == 0, "\(run.output) \(run.errors)")
            #expect(run.output.contains("ACCEL_MOUNT_MATRIX=0, -1, 0; -1, 0, 0; 0, 0, 1"), "\(run.output)")
            let key = "sensor:modalias:acpi:BOSC0200:BOSC0200::dmi:bvnAmericanMegatrendsInc.:bvrP02A_C106.60E:bd11/19/2018:br5.12:svnCHUWIINNOVATIONANDTECHNOLOGY_SHENZHEN_CO.,LTD:pnHi10protablet:pvrDefaultstring:rvnCHUWIINNOVATIONANDTECHNOLOGY_SHENZHEN_CO.,LTD:rnHi10protablet:rvrDefaultstring:cvnDefaultstring:ct3:cvrDefaultstring:skuDefaultstring:"
            #expect(written?.contains(key + "\n ACCEL_MOUNT_MATRIX=0, -1, 0; -1, 0, 0; 0, 0, 1\n") == true, "\(String(describing: written))")
            // The wizard queried the real systemd-hwdb for its key before saying so.
            #expect(run.output.contains("the hwdb gives it for this machine's key"))
            // The shipped record matches the same key (so it is the one udev looks up).
            #expect(try String(contentsOfFile: "/usr/lib/udev/hwdb.d/60-sensor.hwdb", encoding: .utf8).contains(
                "sensor:modalias:acpi:BOSC0200*:dmi:*:svn*CHUWIINNOVATIONANDTECHNOLOGY*:pnHi10protablet:*\n ACCEL_MOUNT_MATRIX=0, -1, 0; -1, 0, 0; 0, 0, 1"))

            #expect(undo?.status == 0 && undo?.output.contains("Removed the entry") == true, "\(String(describing: undo))")
            #expect(try !String(contentsOfFile: root + "/etc/udev/hwdb.d/61-sensor-local.hwdb", encoding: .utf8).contains("ACCEL_MOUNT_MATRIX"))
            let after = try await runProgram("systemd-hwdb", ["--root", root, "query", key])
            #expect(!after.output.contains("ACCEL_MOUNT_MATRIX"))
        }

        /// The left edge up instead of the right: the poses are a mirror image, refused, and nothing is written.
        @Test func aMirroredPoseIsRefusedAndNothingIsWritten() async throws {
            let root = NSTemporaryDirectory() + "mount-root-\(UInt32.random(in: 0...UInt32.max))"
            defer { try? FileManager.default.removeItem(atPath: root) }
            let (run, _, _) = try await Self.wizard(poses: [[256, 0, 0], [0, -256, 0], [0, 0, -256]], root: root)
            #expect(run.status == 1 && run.errors.contains("mirror image"), "\(run.output) \(run.errors)")
            #expect(!FileManager.default.fileExists(atPath: root + "/etc/udev/hwdb.d/61-sensor-local.hwdb"))
        }
    }
}
