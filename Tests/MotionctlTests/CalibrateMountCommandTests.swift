import Foundation
import MotionCore
import MotionDevices
import Synchronization
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `motionctl calibrate mount` on fake machines built from real entries of systemd's
/// 60-sensor.hwdb (Debian 12's copy, line numbers there): each machine's sensor under its parent
/// with the parent's modalias, its DMI modalias as the kernel writes it (dmi-id.c's field order,
/// filled with the fields its entry matches), no matrix from udev yet, and the poses made by its
/// raw counts. The poses are what its chip reads by iio-sensor-proxy's convention (upright reads
/// (0, −1 g, 0) after the shipped matrix, right edge up (−1 g, 0, 0), screen up (0, 0, −1 g)).
/// Moved from `Hardware.CalibrateMountCommand` (issue 61), every test: motiond and motionctl run
/// under umockdev-run, each on a testbed of its own made from the machine's description (motionctl
/// reads its key's parts from sysfs), and the hand's poses are written in motiond's testbed by a
/// shell beside it (`AttributeWriter`), so the test process's environment is never touched. One
/// at a time, as they ran in `Hardware`: each holds poses and turns in real time.
@Suite(.serialized, .onOwnThreads) struct CalibrateMountCommand {
    struct Machine: CustomTestStringConvertible, Sendable {
        var name: String
        /// The shipped record's first match line.
        var shippedMatch: String
        /// Its `ACCEL_MOUNT_MATRIX`.
        var shipped: [Int]
        var parent: String
        var parentSubsystem: String
        var parentModalias: String
        var driverName: String
        /// Extra attributes of the IIO device (`label`, `location`).
        var attributes: [String: String] = [:]
        /// The DMI modalias; nil on a device-tree machine, which has no /sys/class/dmi.
        var dmi: String?
        /// Raw counts of 1 g.
        var countsPerG: Int

        var testDescription: String { name }

        /// Whether udev looks it up by a label (its own, or the location a Chromebook's EC gives).
        var labelled: Bool { attributes["label"] != nil || attributes["location"] != nil }

        /// The umockdev description of the machine, lying flat screen up.
        var fixture: String {
            let scale = String(format: "%.9f", 9.80665 / Double(countsPerG))
            let extra = attributes.sorted { $0.key < $1.key }.map { "A: \($0.key)=\($0.value)\\n\n" }.joined()
            let dmiDevice = dmi.map { "P: /devices/virtual/dmi/id\nE: SUBSYSTEM=dmi\nA: modalias=\($0)\\n\n\n" } ?? ""
            return dmiDevice + """
                P: \(parent)
                E: SUBSYSTEM=\(parentSubsystem)
                A: modalias=\(parentModalias)\\n

                P: \(parent)/iio:device0
                E: SUBSYSTEM=iio
                E: DEVTYPE=iio_device
                A: name=\(driverName)\\n
                \(extra)A: in_accel_x_raw=0\\n
                A: in_accel_y_raw=0\\n
                A: in_accel_z_raw=\(countsPerG)\\n
                A: in_accel_scale=\(scale)\\n

                """
        }

        /// Right edge up, upright, screen up, and the check, left edge up (the wizard's order): the raw counts the chip reads.
        var poses: [[Int]] {
            let m = shipped
            let upright = [-m[3], -m[4], -m[5]].map { $0 * countsPerG }
            let rightEdgeUp = [-m[0], -m[1], -m[2]].map { $0 * countsPerG }
            // right edge up × upright, in g, times counts.
            let r = rightEdgeUp, u = upright
            let screenUp = [r[1] * u[2] - r[2] * u[1], r[2] * u[0] - r[0] * u[2], r[0] * u[1] - r[1] * u[0]].map { $0 / countsPerG }
            return [rightEdgeUp, upright, screenUp, rightEdgeUp.map { -$0 }]
        }

        var shippedValue: String {
            stride(from: 0, to: 9, by: 3).map { shipped[$0..<$0 + 3].map(String.init).joined(separator: ", ") }.joined(separator: "; ")
        }
    }

    /// Seven machines: different drivers, buses, matrices (all with the physical z row, determinant −1,
    /// as 154 of the file's 203 are), DMI strings, and two with a label udev looks them up by.
    static let machines: [Machine] = [
        Machine(
            name: "Chuwi Hi10 Pro (line 298)",
            shippedMatch: "sensor:modalias:acpi:BOSC0200*:dmi:*:svn*CHUWIINNOVATIONANDTECHNOLOGY*:pnHi10protablet:*", shipped: [0, -1, 0, -1, 0, 0, 0, 0, 1],
            parent: "/devices/pci0000:00/808622C1:04/i2c-4/i2c-BOSC0200:00", parentSubsystem: "i2c", parentModalias: "acpi:BOSC0200:BOSC0200:",
            driverName: "bmc150_accel",
            dmi: "dmi:bvnAmericanMegatrendsInc.:bvrP02A_C106.60E:bd11/19/2018:br5.12:svnCHUWIINNOVATIONANDTECHNOLOGY(SHENZHEN)CO.,LTD:pnHi10protablet:pvrDefaultstring:rvnCHUWIINNOVATIONANDTECHNOLOGY(SHENZHEN)CO.,LTD:rnHi10protablet:rvrDefaultstring:cvnDefaultstring:ct3:cvrDefaultstring:skuDefaultstring:",
            countsPerG: 256),
        Machine(
            name: "Lenovo Miix 310 (line 758)",
            shippedMatch: "sensor:modalias:acpi:KIOX000A*:dmi:bvnLENOVO:bvr1HCN4?WW:*:svnLENOVO:pn80SG:*", shipped: [0, 1, 0, 1, 0, 0, 0, 0, 1],
            parent: "/devices/pci0000:00/808622C1:03/i2c-3/i2c-KIOX000A:00", parentSubsystem: "i2c", parentModalias: "acpi:KIOX000A:KIOX000A:",
            driverName: "KIOX000A:00",
            dmi: "dmi:bvnLENOVO:bvr1HCN44WW:bd06/02/2017:br1.44:efr1.44:svnLENOVO:pn80SG:pvrMIIX310-10ICR:rvnLENOVO:rnLNVNB161216:rvrSDK0K09938WIN:cvnLENOVO:ct32:cvrMIIX310-10ICR:skuLENOVO_MT_80SG_BU_idea_FM_MIIX310-10ICR:",
            countsPerG: 1024),
        Machine(
            name: "Asus T100TA (line 151)",
            shippedMatch: "sensor:modalias:acpi:INVN6500*:dmi:*svnASUSTeK*:*pnT100TA:*", shipped: [1, 0, 0, 0, -1, 0, 0, 0, 1],
            parent: "/devices/pci0000:00/80860F41:03/i2c-3/i2c-INVN6500:00", parentSubsystem: "i2c", parentModalias: "acpi:INVN6500:INVN6500:",
            driverName: "mpu6500",
            dmi: "dmi:bvnAmericanMegatrendsInc.:bvrT100TA.314:bd08/13/2014:svnASUSTeKCOMPUTERINC.:pnT100TA:pvr1.0:rvnASUSTeKCOMPUTERINC.:rnT100TA:rvr1.0:cvnASUSTeKCOMPUTERINC.:ct10:cvr0.1:",
            countsPerG: 16384),
        Machine(
            name: "Asus Transformer Mini T103HAF, an HID sensor hub (line 159)",
            shippedMatch: "sensor:modalias:platform:HID-SENSOR-200073*:dmi:*svn*ASUSTeK*:pnT103HAF:*", shipped: [0, -1, 0, 1, 0, 0, 0, 0, -1],
            parent: "/devices/pci0000:00/0000:00:12.0/{33AECD58-B679-4E54-9BD9-A04D34F0C226}/001F:8087:0AC2.0001/HID-SENSOR-200073.2.auto",
            parentSubsystem: "platform", parentModalias: "platform:HID-SENSOR-200073", driverName: "accel_3d",
            dmi: "dmi:bvnAmericanMegatrendsInc.:bvrT103HAF.306:bd03/15/2018:br5.12:svnASUSTeKCOMPUTERINC.:pnT103HAF:pvr1.0:rvnASUSTeKCOMPUTERINC.:rnT103HAF:rvr1.0:cvnASUSTeKCOMPUTERINC.:ct31:cvr1.0:",
            countsPerG: 1000),
        Machine(
            name: "Lenovo Miix3-830 (line 745)",
            shippedMatch: "sensor:modalias:acpi:SMO8500*:dmi:bvnLENOVO:*:pvrLenovoMIIX3-830:*", shipped: [-1, 0, 0, 0, 1, 0, 0, 0, 1],
            parent: "/devices/pci0000:00/80860F41:04/i2c-4/i2c-SMO8500:00", parentSubsystem: "i2c", parentModalias: "acpi:SMO8500:SMO8500:",
            driverName: "SMO8500:00",
            dmi: "dmi:bvnLENOVO:bvrA3CN30WW:bd12/03/2014:br0.30:svnLENOVO:pn80JU:pvrLenovoMIIX3-830:rvnLENOVO:rnLenovoMIIX3-830:rvr31900059WIN:cvnLENOVO:ct11:cvrLenovoMIIX3-830:",
            countsPerG: 1024),
        Machine(
            name: "Lenovo Yoga 300-11IBR's display, labelled (line 778)",
            shippedMatch: "sensor:modalias:acpi:DUAL250E*:dmi:*:svnLENOVO:*:pvrLenovoYoga300-11IBR:*", shipped: [0, -1, 0, -1, 0, 0, 0, 0, 1],
            parent: "/devices/pci0000:00/808622C1:02/i2c-2/i2c-DUAL250E:00", parentSubsystem: "i2c", parentModalias: "acpi:DUAL250E:DUAL250E:",
            driverName: "bmc150_accel", attributes: ["label": "accel-display"],
            dmi: "dmi:bvnLENOVO:bvrA3CN31WW:bd05/16/2016:br1.31:svnLENOVO:pn80M1:pvrLenovoYoga300-11IBR:rvnLENOVO:rnRenoirH:rvrNODPK:cvnLENOVO:ct10:cvrLenovoYoga300-11IBR:",
            countsPerG: 256),
        Machine(
            name: "a Chromebook's lid sensor, located by its EC (line 557)",
            shippedMatch: "sensor:modalias:platform:cros-ec-accel:*", shipped: [-1, 0, 0, 0, -1, 0, 0, 0, -1],
            parent: "/devices/pci0000:00/0000:00:1f.0/PNP0C09:00/GOOG0004:00/cros-ec-dev.1.auto/cros-ec-accel.0",
            parentSubsystem: "platform", parentModalias: "platform:cros-ec-accel", driverName: "cros-ec-accel", attributes: ["location": "lid"],
            dmi: "dmi:bvncoreboot:bvrGoogle_Eve.9584.230.0:bd08/26/2019:br4.0:svnGoogle:pnEve:pvr1.0:rvnGoogle:rnEve:rvr1.0:cvnGoogle:ct9:cvr:",
            countsPerG: 1024),
    ]

    /// The PineTab2, a device-tree machine (60-sensor.hwdb line 989, its only `of:` record): no DMI,
    /// an SC7A20 (st_accel, name `sc7a20`, Linux 6.3) on i2c whose parent's modalias the kernel writes
    /// with its node's missing device_type as `(null)` (drivers/of/module.c). Its shipped z row is
    /// x × y, where the wizard writes the other z row, as 154 of the file's records have it: motiond
    /// completes both as x × y (`DeviceFrame`), so the two read the same.
    static let pineTab2 = Machine(
        name: "PineTab2, device tree, no DMI (line 989)",
        shippedMatch: "sensor:modalias:of:NaccelerometerT_null_Csilan,sc7a20:*", shipped: [0, 0, -1, 1, 0, 0, 0, -1, 0],
        parent: "/devices/platform/fe5c0000.i2c/i2c-4/4-0018", parentSubsystem: "i2c", parentModalias: "of:NaccelerometerT(null)Csilan,sc7a20",
        driverName: "sc7a20", dmi: nil, countsPerG: 1024)

    /// On the PineTab2 the wizard finishes: its key has udev's empty DMI part and the shipped record
    /// matches it; the x and y rows it writes are the shipped ones, and motiond reads its matrix as
    /// the shipped one. Before, it exited 1: "cannot read /sys/class/dmi/id/modalias (ENOENT)".
    @Test func theWizardFinishesOnADeviceTreeMachineWithoutDMI() async throws {
        let root = NSTemporaryDirectory() + "mount-root-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let machine = Self.pineTab2
        let (run, written, _) = try await Self.wizard(on: machine, poses: machine.poses, root: root)
        #expect(run.status == 0, "\(run.output) \(run.errors)")
        let entry = try #require(written, "nothing written")
        let keys = entry.split(separator: "\n").filter { $0.hasPrefix("sensor:") }.map(String.init)
        #expect(keys == ["sensor:modalias:of:NaccelerometerT_null_Csilan,sc7a20:"], "\(keys)")
        let shipped = try await Hwdb.lookUp(try #require(keys.first), in: ["lib/udev/hwdb.d/60-sensor.hwdb": try Hwdb.shippedRecord(startingWith: machine.shippedMatch)])
        #expect(shipped.properties.contains("ACCEL_MOUNT_MATRIX=\(machine.shippedValue)"), "\(keys): \(shipped.properties)")
        let value = try #require(entry.split(separator: "\n").first { $0.hasPrefix(" ACCEL_MOUNT_MATRIX=") }).dropFirst(" ACCEL_MOUNT_MATRIX=".count)
        let wizards = try #require(MountMatrixOverride(match: .name(machine.driverName), matrix: String(value))).matrix
        let theirs = Matrix3(rowMajor: machine.shipped.map(Double.init))
        #expect(wizards.row0 == theirs.row0 && wizards.row1 == theirs.row1, "\(value)")
        #expect(try DeviceFrame.transform(mountMatrix: wizards).matrix == DeviceFrame.transform(mountMatrix: theirs).matrix, "\(value)")
    }

    /// A person at the wizard: the machine is in its first pose from the start, and each later pose
    /// is made when the wizard asks for it (its k-th instruction asks for pose k − 1, which `make`
    /// makes, a turn taking the time it takes), on a thread of its own. No pose is held by the
    /// clock: the wizard decides when one has been held.
    final class Hand: Sendable {
        /// The beginnings of the wizard's instructions, one per pose (`CalibrateMount.run`).
        static let instructions = [
            "Fold it right back", "Hold the screen in front of you", "Turn it upright", "Lay it flat on a table", "To check:",
        ]
        private let asked = DispatchSemaphore(value: 0)
        private let heardCount = Mutex(0)
        private let finished = Atomic(false)

        init(poses: Int, make: @escaping @Sendable (Int) -> Void) {
            Thread { [self] in
                make(0)
                for index in 1..<max(1, poses) {
                    asked.wait()
                    if finished.load(ordering: .acquiring) { return }
                    make(index)
                }
            }.start()
        }

        /// A line the wizard printed: an instruction past the first asks for the next pose.
        func heard(_ line: String) {
            guard Self.instructions.contains(where: { line.hasPrefix($0) }) else { return }
            if heardCount.withLock({ count in count += 1; return count }) > 1 { asked.signal() }
        }

        /// The wizard has ended: the hand makes no more poses.
        func finish() {
            finished.store(true, ordering: .releasing)
            asked.signal()
        }
    }

    /// Writes `counts` as the accelerometer's raw x, y and z of `device`, through `writer`.
    @Sendable static func write(_ counts: [Int], to device: String = "iio:device0", with writer: AttributeWriter) {
        for (axis, value) in zip(["x", "y", "z"], counts) { writer.set(device, "in_accel_\(axis)_raw", "\(value)") }
    }

    /// Runs motionctl (or `program`, which runs it) with `arguments` on `machine`, `hand` making the
    /// poses it asks for.
    static func motionctl(_ arguments: [String], program: String? = nil, on machine: ChildTestbed, hand: Hand) async throws -> ProgramRun {
        defer { hand.finish() }
        return try await machine.run(program ?? Self.motionctlPath, arguments, hearing: hand.heard)
    }

    /// The motionctl built beside the tests.
    static var motionctlPath: String { ReplayDaemon.products.appendingPathComponent("motionctl").path }

    /// motiond on `machine`, with `writer` writing in its testbed; stopped when the test ends.
    static func daemon(on machine: ChildTestbed, writer: AttributeWriter? = nil) throws -> (DaemonProcess, socket: String) {
        let socket = NSTemporaryDirectory() + "mount-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        return (try machine.daemon(socket: socket, writer: writer), socket)
    }

    /// Runs the wizard on `machine` with `poses` made; then, if `undo`, `--undo` (the daemon still
    /// running). `written`: the local hwdb file between the two.
    static func wizard(on machine: Machine, poses: [[Int]], root: String, undo: Bool = false) async throws -> (run: ProgramRun, written: String?, undo: ProgramRun?) {
        let testbed = try ChildTestbed(devices: machine.fixture), writer = try AttributeWriter()
        let (daemon, socket) = try Self.daemon(on: testbed, writer: writer)
        defer { _ = daemon.secondsToExit(after: SIGTERM) }
        let arguments = ["calibrate", "mount", "--socket", socket, "--root", root]
        let hand = Hand(poses: poses.count) { write(poses[$0], with: writer) }
        let run = try await motionctl(arguments + ["--hold", "0.25", "--timeout", "15"], on: testbed, hand: hand)
        let written = try? String(contentsOfFile: root + "/etc/udev/hwdb.d/61-sensor-local.hwdb", encoding: .utf8)
        return (run, written, undo ? try await testbed.run(Self.motionctlPath, arguments + ["--undo"]) : nil)
    }

    /// The three poses give the shipped matrix, and the fourth agrees; the entry is written where udev reads it, under the
    /// key udev looks this machine up by (the shipped record, compiled alone by the real
    /// systemd-hwdb, matches it: the plain form, for a labelled sensor, which udev looks up by its
    /// label only, and whose record therefore carries both), and the real systemd-hwdb finds the
    /// wizard's entry for it; `--undo` removes it again.
    @Test(arguments: CalibrateMountCommand.machines)
    func theWizardWritesTheMatrixSystemdShipsUnderTheKeyUdevLooksUp(machine: Machine) async throws {
        let root = NSTemporaryDirectory() + "mount-root-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (run, written, undo) = try await Self.wizard(on: machine, poses: machine.poses, root: root, undo: true)
        #expect(run.status == 0, "\(run.output) \(run.errors)")
        #expect(run.output.contains("ACCEL_MOUNT_MATRIX=\(machine.shippedValue)"), "\(run.output)")
        let entry = try #require(written, "nothing written")
        // The key udev looks up, then, for a labelled sensor, the plain form 60-sensor.hwdb's records are written for.
        let keys = entry.split(separator: "\n").filter { $0.hasPrefix("sensor:") }.map(String.init)
        let key = try #require(keys.first)
        #expect(entry.contains("\n ACCEL_MOUNT_MATRIX=\(machine.shippedValue)\n"), "\(entry)")
        // The wizard queried the real systemd-hwdb for its key before saying so.
        #expect(run.output.contains("the hwdb gives it for this machine's key"))
        #expect(keys.count == (machine.labelled ? 2 : 1), "\(keys)")
        // The shipped record matches the key the wizard wrote (its plain form for a labelled sensor):
        // the wizard's key is this machine's.
        let shipped = try await Hwdb.lookUp(keys.last!, in: ["lib/udev/hwdb.d/60-sensor.hwdb": try Hwdb.shippedRecord(startingWith: machine.shippedMatch)])
        #expect(shipped.updateStatus == 0 && shipped.properties.contains("ACCEL_MOUNT_MATRIX=\(machine.shippedValue)"), "\(keys): \(shipped.properties)")

        #expect(undo?.status == 0 && undo?.output.contains("Removed the entry") == true, "\(String(describing: undo))")
        #expect(try !String(contentsOfFile: root + "/etc/udev/hwdb.d/61-sensor-local.hwdb", encoding: .utf8).contains("ACCEL_MOUNT_MATRIX"))
        let after = try await runProgram("systemd-hwdb", ["--root", root, "query", key])
        #expect(!after.output.contains("ACCEL_MOUNT_MATRIX"))
    }

    /// A Chuwi Hi10 Pro with a gyroscope on a chip of its own (a bmg160, no matrix), its axes x and y
    /// swapped and z inverted against the accelerometer's chip (`chip`, a turn). The device is turned
    /// from pose to pose at 0.8 rad/s, the gyroscope reading the turn, while the wizard asks for
    /// them: motiond's check finds the gyroscope disagreeing, and the wizard writes its matrix to
    /// motiond.conf so that it follows the accelerometer's new one. Physically the gyroscope reads
    /// `chip` times what the accelerometer's chip turns at, so its readings in the accelerometer's
    /// chip frame are `chipᵀ` of its own, and in Linux userspace's frame (hwdb's and motiond.conf's)
    /// `R · chipᵀ`, R the accelerometer's new matrix as motiond reads it (its z row completed).
    @Test func aGyroscopeOnAChipOfItsOwnGetsTheMatrixThatFollowsTheAccelerometersNewOne() async throws {
        let root = NSTemporaryDirectory() + "mount-root-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let chuwi = Self.machines[0]
        let chip = Matrix3(rowMajor: [0, 1, 0, 1, 0, 0, 0, 0, -1])
        let gyroscopeScale = 0.001065264
        let testbed = try ChildTestbed(devices: chuwi.fixture + """

            P: /devices/pci0000:00/808622C1:04/i2c-4/i2c-BMG0160:00
            E: SUBSYSTEM=i2c
            A: modalias=acpi:BMG0160:BMG0160:\\n

            P: /devices/pci0000:00/808622C1:04/i2c-4/i2c-BMG0160:00/iio:device1
            E: SUBSYSTEM=iio
            E: DEVTYPE=iio_device
            A: name=bmg160\\n
            A: in_anglvel_x_raw=0\\n
            A: in_anglvel_y_raw=0\\n
            A: in_anglvel_z_raw=0\\n
            A: in_anglvel_scale=\(gyroscopeScale)\\n

            """)
        let writer = try AttributeWriter()
        let (daemon, socket) = try Self.daemon(on: testbed, writer: writer)
        defer { _ = daemon.secondsToExit(after: SIGTERM) }
        // Each pose held until the wizard asks for the next, then a turn to it about the axis between them, 100 writes a second.
        @Sendable func write(_ values: Vector3, _ device: String, _ channel: String) {
            for (axis, value) in zip(["x", "y", "z"], [values.x, values.y, values.z]) {
                writer.set(device, "in_\(channel)_\(axis)_raw", "\(Int(value.rounded()))")
            }
        }
        let ups = chuwi.poses.map { Vector3(x: Double($0[0]), y: Double($0[1]), z: Double($0[2])) * (1 / Double(chuwi.countsPerG)) }
        let hand = Hand(poses: ups.count) { index in
            guard index > 0 else { return write(ups[0] * Double(chuwi.countsPerG), "iio:device0", "accel") }
            // û turns about a as the device turns at ω = −θ̇·a (dû/dt = û × ω), in the chip's frame.
            let up = ups[index - 1], next = ups[index], axis = up.cross(next) * (1 / up.cross(next).length)
            let angle = acos(max(-1, min(1, up.dot(next)))), rate = 0.8
            // The pose follows the clock, not the count of steps: on a loaded machine a sleep
            // overshoots, and the chip would turn slower than the gyroscope says.
            let start = Date()
            var step = 0
            while true {
                let turnedBy = min(angle, rate * Date().timeIntervalSince(start))
                write(Quaternion(angle: turnedBy, axis: axis).rotate(up) * Double(chuwi.countsPerG), "iio:device0", "accel")
                guard turnedBy < angle else { break }
                // A count of noise, as a real gyroscope's: a reading that never changes is read as
                // the same measurement again (`ChangeInstant`), not a new one.
                step += 1
                let dither = Vector3(x: 1, y: 1, z: 1) * Double(step % 2)
                write(chip * (axis * -rate) * (1 / gyroscopeScale) + dither, "iio:device1", "anglvel")
                Thread.sleep(forTimeInterval: 0.01)
            }
            write(.zero, "iio:device1", "anglvel")
        }
        let run = try await Self.motionctl(["calibrate", "mount", "--socket", socket, "--root", root, "--hold", "0.25", "--timeout", "15"], on: testbed, hand: hand)
        #expect(run.status == 0, "\(run.output) \(run.errors)")
        #expect(run.output.contains("The gyroscope's axes disagree with the accelerometer's"), "\(run.output)")
        let read = try DeviceFrame.transform(mountMatrix: Matrix3(rowMajor: chuwi.shipped.map(Double.init)))
        let expected = read.rotation * chip.transposed
        let rows = [expected.row0, expected.row1, expected.row2].map { r in [r.x, r.y, r.z].map { String(Int($0.rounded())) }.joined(separator: ", ") }
        let conf = try String(contentsOfFile: root + "/etc/motiond/motiond.conf", encoding: .utf8)
        #expect(conf.contains(#"  - {name: "bmg160", matrix: ""# + rows.joined(separator: "; ") + #""}"#), "\(conf)")
        // Undone, the accelerometer's entry goes, and the gyroscope's that followed it.
        let undo = try await testbed.run(Self.motionctlPath, ["calibrate", "mount", "--socket", socket, "--root", root, "--undo"])
        #expect(undo.status == 0 && undo.output.contains("Removed from"), "\(undo.output) \(undo.errors)")
        #expect(try !String(contentsOfFile: root + "/etc/motiond/motiond.conf", encoding: .utf8).contains("bmg160"))
    }

    /// A Lenovo Yoga 300-11IBR, a 360° 2-in-1 (60-sensor.hwdb lines 778–785): its display's sensor
    /// and, on the same DUAL250E ACPI node, the base's, which the kernel makes a second i2c client
    /// `i2c-DUAL250E:base` of type bmc150_accel labelled `accel-base` (drivers/iio/accel/bmc150-accel-i2c.c
    /// and -core.c). Neither has a matrix from udev yet.
    static let yoga = (display: machines[5], base: Machine(
        name: "Lenovo Yoga 300-11IBR's base, labelled (line 783)",
        shippedMatch: "sensor:modalias:i2c:bmc150_accel:dmi:*:svnLENOVO:*:pvrLenovoYoga300-11IBR:*", shipped: [1, 0, 0, 0, 1, 0, 0, 0, -1],
        parent: "/devices/pci0000:00/808622C1:02/i2c-2/i2c-DUAL250E:base", parentSubsystem: "i2c", parentModalias: "i2c:bmc150_accel",
        driverName: "bmc150_accel", attributes: ["label": "accel-base"], dmi: machines[5].dmi, countsPerG: 256))

    /// The Yoga's fixture: its display's sensor as iio:device0, the base's as iio:device1.
    static func yogaFixture() -> String {
        let base = yoga.base.fixture.components(separatedBy: "\n\n").dropFirst().joined(separator: "\n\n")
            .replacingOccurrences(of: "iio:device0", with: "iio:device1")
        return yoga.display.fixture + "\n" + base
    }

    /// Runs the wizard on the Yoga, lying flat at the start, the display's chip reading `display` in
    /// each pose and the base's `base`; with `answer`, at a terminal (script(1)), typing it.
    static func wizardOnTheYoga(display: [[Int]], base: [[Int]], root: String, answer: String? = nil) async throws -> (run: ProgramRun, written: String?) {
        let testbed = try ChildTestbed(devices: yogaFixture()), writer = try AttributeWriter()
        let (daemon, socket) = try Self.daemon(on: testbed, writer: writer)
        defer { _ = daemon.secondsToExit(after: SIGTERM) }
        // Each pose held until the wizard asks for the next, then a turn of 1 s to it, as a hand makes
        // it: the base's polling, slowed while it lay still (AdaptivePolling), is moving again by the next pose.
        @Sendable func write(_ device: String, _ pose: [Int], _ next: [Int], _ f: Double) {
            let v = zip(pose, next).map { Double($0) * (1 - f) + Double($1) * f }
            let scale = 256 / max(1, (v.map { $0 * $0 }.reduce(0, +)).squareRoot())
            Self.write(v.map { Int(($0 * scale).rounded()) }, to: device, with: writer)
        }
        let hand = Hand(poses: display.count) { index in
            guard index > 0 else {
                write("iio:device0", display[0], display[0], 0)
                return write("iio:device1", base[0], base[0], 0)
            }
            for step in 1...20 {
                write("iio:device0", display[index - 1], display[index], Double(step) / 20)
                write("iio:device1", base[index - 1], base[index], Double(step) / 20)
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        let arguments = ["calibrate", "mount", "--socket", socket, "--root", root, "--hold", "0.25", "--timeout", "15"]
        let run: ProgramRun
        if let answer {
            run = try await Self.motionctl(
                ["-c", "printf '\(answer)\\n' | script -qec '\(([Self.motionctlPath] + arguments).joined(separator: " "))' /dev/null"], program: "/bin/sh", on: testbed,
                hand: hand)
        } else {
            run = try await Self.motionctl(arguments, on: testbed, hand: hand)
        }
        return (run, try? String(contentsOfFile: root + "/etc/udev/hwdb.d/61-sensor-local.hwdb", encoding: .utf8))
    }

    /// A Yoga whose base chip is mounted as the HUAWEI MateBook D 15's base is (60-sensor.hwdb line
    /// 644: x and y swapped, so that motiond reads the base turned against the display without an
    /// entry). Folded right back, the base turns with the display: the wizard derives that matrix
    /// from the same poses, writes it under the base's key with ACCEL_LOCATION=base beside the
    /// display's shipped one, the real systemd-hwdb gives it for both of the base's keys, and
    /// `--undo` removes both entries.
    @Test func aTwoInOnesBaseTurnedAgainstTheDisplayGetsAnEntryOfItsOwn() async throws {
        let root = NSTemporaryDirectory() + "mount-root-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        var base = Self.yoga.base
        base.shipped = [0, 1, 0, 1, 0, 0, 0, 0, 1]
        let display = Self.yoga.display
        // Lying flat screen up at the start (the third pose), then the four.
        let (run, written) = try await Self.wizardOnTheYoga(display: [display.poses[2]] + display.poses, base: [base.poses[2]] + base.poses, root: root)
        #expect(run.status == 0, "\(run.output) \(run.errors)")
        #expect(run.output.contains("ACCEL_MOUNT_MATRIX=\(display.shippedValue) for iio:device0"), "\(run.output)")
        #expect(run.output.contains("The base's accelerometer (iio:device1) disagrees with the display's: ACCEL_MOUNT_MATRIX=\(base.shippedValue)"), "\(run.output)")
        let entry = try #require(written, "nothing written")
        #expect(entry.contains(" ACCEL_MOUNT_MATRIX=\(display.shippedValue)\n ACCEL_LOCATION=display\n"), "\(entry)")
        #expect(entry.contains(" ACCEL_MOUNT_MATRIX=\(base.shippedValue)\n ACCEL_LOCATION=base\n"), "\(entry)")
        let baseKeys = entry.split(separator: "\n").filter { $0.hasPrefix("sensor:accel-base:") || $0.hasPrefix("sensor:modalias:i2c:bmc150_accel:") }.map(String.init)
        #expect(baseKeys.count == 2, "the lookup key and its plain form: \(baseKeys)")
        for key in baseKeys {
            let found = try await runProgram("systemd-hwdb", ["--root", root, "query", key])
            #expect(found.output.contains("ACCEL_MOUNT_MATRIX=\(base.shippedValue)") && found.output.contains("ACCEL_LOCATION=base"), "\(key): \(found.output)")
        }
        // The key is the Yoga base's: its shipped record (line 783) matches it.
        let shipped = try await Hwdb.lookUp(try #require(baseKeys.last), in: ["lib/udev/hwdb.d/60-sensor.hwdb": try Hwdb.shippedRecord(startingWith: base.shippedMatch)])
        #expect(shipped.properties.contains("ACCEL_LOCATION=base"), "\(baseKeys): \(shipped.properties)")

        let testbed = try ChildTestbed(devices: Self.yogaFixture())
        let (daemon, socket) = try Self.daemon(on: testbed)
        defer { _ = daemon.secondsToExit(after: SIGTERM) }
        let undo = try await testbed.run(Self.motionctlPath, ["calibrate", "mount", "--socket", socket, "--root", root, "--undo"])
        #expect(undo.status == 0 && undo.output.components(separatedBy: "Removed the entry").count == 3, "\(undo.output) \(undo.errors)")
        #expect(try !String(contentsOfFile: root + "/etc/udev/hwdb.d/61-sensor-local.hwdb", encoding: .utf8).contains("ACCEL_MOUNT_MATRIX"))
    }

    /// The real Yoga's base, folded right back: motiond reads it as the display already (its shipped
    /// matrix differs from none only in the z row, which motiond completes as x × y), so it agrees
    /// and gets no entry. A base that lay still while the display turned (the machine not folded)
    /// did not turn with it and gets none either. The display's entry is written both times.
    @Test(arguments: [
        (folded: true, says: "The base's accelerometer (iio:device1) agrees with the display's."),
        (folded: false, says: "The base's accelerometer (iio:device1) did not turn as the display did"),
    ])
    func aBaseThatAgreesOrDidNotTurnWithTheDisplayGetsNoEntry(folded: Bool, says: String) async throws {
        let root = NSTemporaryDirectory() + "mount-root-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (display, base) = Self.yoga
        let basePoses = folded ? [base.poses[2]] + base.poses : Array(repeating: base.poses[2], count: 5)
        let (run, written) = try await Self.wizardOnTheYoga(display: [display.poses[2]] + display.poses, base: basePoses, root: root)
        #expect(run.status == 0, "\(run.output) \(run.errors)")
        #expect(run.output.contains(says), "\(run.output)")
        let entry = try #require(written, "nothing written")
        #expect(entry.contains(" ACCEL_MOUNT_MATRIX=\(display.shippedValue)\n ACCEL_LOCATION=display\n"), "\(entry)")
        #expect(!entry.contains("ACCEL_LOCATION=base"), "\(entry)")
    }

    /// At a terminal the wizard asks whether the machine folds right back; answered no (a detachable,
    /// a hinge that stops at 180°), the display is calibrated alone and the base is not checked.
    @Test func aTwoInOneThatDoesNotFoldBackIsCalibratedByItsDisplayAlone() async throws {
        let root = NSTemporaryDirectory() + "mount-root-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (display, base) = Self.yoga
        let (run, written) = try await Self.wizardOnTheYoga(display: display.poses, base: Array(repeating: base.poses[2], count: 4), root: root, answer: "n")
        #expect(run.status == 0, "\(run.output) \(run.errors)")
        #expect(run.output.contains("Does the machine fold right back into a tablet, screen out? [Y/n]"), "\(run.output)")
        #expect(run.output.contains("The base's matrix is not checked") && !run.output.contains("The base's accelerometer (iio:device1)"), "\(run.output)")
        let entry = try #require(written, "nothing written")
        #expect(entry.contains(" ACCEL_MOUNT_MATRIX=\(display.shippedValue)\n ACCEL_LOCATION=display\n"), "\(entry)")
        #expect(!entry.contains("ACCEL_LOCATION=base"), "\(entry)")
    }

    /// Poses from which no mount matrix follows are refused with the reason, and nothing is written:
    /// the left edge up instead of the right (the poses are a mirror image), and a check pose that
    /// is not the left edge (the screen down instead: the matrix does not predict it). The Chuwi's
    /// poses, one changed. The solver's refusals themselves are `MountMatrixSolverTests`'.
    @Test(arguments: [
        ("the right edge's pose mirrored", [machines[0].poses[0].map { -$0 }, machines[0].poses[1], machines[0].poses[2]], "mirror image"),
        ("the check pose screen down", [machines[0].poses[0], machines[0].poses[1], machines[0].poses[2], machines[0].poses[2].map { -$0 }],
         "the check pose (left edge up) reads 90° away"),
    ] as [(String, [[Int]], String)])
    func posesThatGiveNoMountMatrixAreRefusedAndNothingIsWritten(changed: String, poses: [[Int]], says: String) async throws {
        let root = NSTemporaryDirectory() + "mount-root-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (run, _, _) = try await Self.wizard(on: Self.machines[0], poses: poses, root: root)
        #expect(run.status == 1 && run.errors.contains(says), "\(changed): \(run.output) \(run.errors)")
        #expect(!FileManager.default.fileExists(atPath: root + "/etc/udev/hwdb.d/61-sensor-local.hwdb"))
    }

    /// A hand that never holds still: the wizard waits for a still pose, says so, and gives up at
    /// its timeout with nothing written.
    @Test func aPoseThatIsNeverStillIsRefusedAndNothingIsWritten() async throws {
        let root = NSTemporaryDirectory() + "mount-root-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let chuwi = Self.machines[0]
        // Upright, shaken by ±0.3 g every 0.3 s for longer than the wizard waits.
        let shaking = (0..<40).map { i in i % 2 == 0 ? [256, 77, 0] : [256, -77, 0] }
        let testbed = try ChildTestbed(devices: chuwi.fixture), writer = try AttributeWriter()
        let (daemon, socket) = try Self.daemon(on: testbed, writer: writer)
        defer { _ = daemon.secondsToExit(after: SIGTERM) }
        let shaken = Atomic(false)
        Thread {
            for pose in shaking where !shaken.load(ordering: .acquiring) {
                Self.write(pose, with: writer)
                Thread.sleep(forTimeInterval: 0.3)
            }
        }.start()
        defer { shaken.store(true, ordering: .releasing) }
        let run = try await testbed.run(Self.motionctlPath, ["calibrate", "mount", "--socket", socket, "--root", root, "--hold", "1", "--timeout", "4"])
        #expect(run.status == 1 && run.errors.contains("the pose was not held still within 4 s"), "\(run.output) \(run.errors)")
        #expect(!FileManager.default.fileExists(atPath: root + "/etc/udev/hwdb.d/61-sensor-local.hwdb"))
    }
}
