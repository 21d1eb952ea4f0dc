import ArgumentParser
import FoundationEssentials
import MotionClientCore
import MotionCore
import MotionDevices
import MotionFusion
import MotionSystem
import Synchronization
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// `motionctl calibrate mount`: the accelerometer's mount matrix from three still poses, written to
/// the hwdb where udev reads it, so that every reader of `ACCEL_MOUNT_MATRIX` (iio-sensor-proxy,
/// motiond, Chromium) puts the screen the right way up.
struct CalibrateMount: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mount",
        abstract: "Find the accelerometer's mount matrix from three poses and a check, and write it to the hwdb for every daemon.",
        discussion: """
            Hold the machine still in each pose asked for: on its right edge facing you, upright, lying screen \
            up, then on its left edge to check (in that order, the turns between them go about all three of its \
            axes, which motiond's check of a gyroscope's axes needs). A 2-in-1 with a second accelerometer in its \
            base is folded right back into a tablet, screen out, for every pose: the base's matrix is then checked \
            against the display's (folded so, systemd's hwdb has the two read the same), and written too where it \
            disagrees. The matrix is derived from the sensor's raw axes (a pose held at a slant, repeated or mirrored \
            is refused), written to \(Self.localHwdb) under the key udev's 60-sensor.rules looks up, compiled \
            with systemd-hwdb, applied with udevadm trigger, and printed ready to send upstream to systemd's \
            60-sensor.hwdb. Without root it prints the entry and the commands to run.
            """)

    /// Where local hwdb entries go (udev reads /etc/udev/hwdb.d; 61- comes after systemd's 60-sensor.hwdb and wins).
    static let localHwdb = "/etc/udev/hwdb.d/61-sensor-local.hwdb"

    @OptionGroup var connection: ConnectionOptions

    @Option(help: "The accelerometer's device, such as iio:device0 (default: the display's, or the only one).")
    var device: String?

    @Flag(help: "Print the entry; write nothing.")
    var dryRun = false

    @Flag(help: "Remove the entries this command wrote for the device (and a 2-in-1's base), and the motiond.conf matrices that followed them.")
    var undo = false

    @Option(help: "Seconds each pose is held still.")
    var hold: Double = 1.0

    @Option(help: "Seconds to wait for each pose.")
    var timeout: Double = 60

    @Option(help: "motiond's configuration, where a gyroscope's or magnetometer's matrix goes.")
    var config = "/etc/motiond/motiond.conf"

    @Option(help: ArgumentHelp("Write under this root instead of /, and do not trigger udev (for tests).", visibility: .hidden))
    var root: String?

    func run() throws {
        let client = connection.client
        let devices = try reportingErrors { try client.devices() }
        let accelerometers = devices.filter { $0.kinds.contains(.accelerometer) }
        guard let chosen = device.map({ name in accelerometers.first { $0.device == name } }) ?? accelerometers.first(where: { $0.location != "base" }) ?? accelerometers.first
        else { fail(device.map { "\($0) is not an accelerometer motiond reads" } ?? "motiond reads no accelerometer") }
        let syspath = Self.syspath(of: chosen.device)
        let key: SensorHwdbKey
        do {
            key = try SensorHwdbKey.reading(syspath: syspath)
        } catch {
            fail("cannot build the hwdb key of \(chosen.device): \(error)")
        }
        let hwdb = HwdbFile(path: (root ?? "") + Self.localHwdb, root: root ?? "")
        // A 2-in-1's other accelerometer, in its base: checked against the display's on the same poses.
        // One whose key cannot be built is left out: the display's matrix is what was asked for.
        let baseSensor = accelerometers.first { $0.location == SensorLocation.base.rawValue && $0.device != chosen.device }.flatMap {
            device -> (device: DevicesReply.Device, syspath: String, key: SensorHwdbKey)? in
            let syspath = Self.syspath(of: device.device)
            do {
                return (device, syspath, try SensorHwdbKey.reading(syspath: syspath))
            } catch {
                print("The base's accelerometer (\(device.device)) is not checked: its hwdb key cannot be built (\(error)).")
                return nil
            }
        }
        let base = baseSensor?.device
        if undo {
            try remove([(key, syspath)] + (baseSensor.map { [($0.key, $0.syspath)] } ?? []), from: hwdb)
            return
        }
        guard let frame = chosen.frameMatrix.flatMap(Self.matrix) else { fail("motiond does not say how it turns \(chosen.device)'s readings") }
        let baseReadings = base.flatMap { base in Self.foldsBack(base) ? BaseReadings(client: client, base: base) : nil }
        defer { baseReadings?.stop() }
        // A 2-in-1 starts folded and lying flat: the turn from there to the first pose is waited for,
        // and motiond knows the hinge's angle, which the base's readings come with.
        var start: Vector3?
        if let base, let baseReadings {
            print("This is a 2-in-1 with a second accelerometer in its base (\(base.device)): its matrix is checked against the display's.")
            start = try pose("Fold it right back into a tablet, screen out, keep it folded for every pose, and lay it on a table screen up.", previous: nil, client: client, frame: frame)
            if !baseReadings.waitForFirstReading(timeout: 2) {
                // The readings come with the hinge's angle: none while the hinge stands upright as motiond reads it
                // (a display matrix that turns x up), and none from a daemon before protocol 1.9.
                print("motiond sends no reading of the base: its matrix is not checked.")
            }
        }
        // Motion watched through the poses: motiond fuses it, and checks the gyroscope's and the
        // magnetometer's axes on the turns between them (STATUS gyroscope_axes, magnetometer_axes).
        let fusing = devices.contains { $0.kinds.contains(.gyroscope) } ? client.watch([.motion], interval: 0.05) { _ in } : nil
        defer { fusing?.cancel() }
        // In this order the turns between the poses go about the screen's normal, its vertical and its
        // horizontal axis: every axis, which the gyroscope's axis check needs (`TurnEvidence`).
        let rightEdge = try pose("Hold the screen in front of you, turned a quarter turn so that its right edge points up.", previous: start, client: client, frame: frame)
        baseReadings?.takePose()
        let upright = try pose("Turn it upright, the right way up to read.", previous: rightEdge, client: client, frame: frame)
        baseReadings?.takePose()
        let screenUp = try pose("Lay it flat on a table, screen up.", previous: upright, client: client, frame: frame)
        baseReadings?.takePose()
        let matrix: Matrix3
        switch MountMatrixSolver.matrix(upright: upright, rightEdgeUp: rightEdge, screenUp: screenUp) {
        case .success(let m): matrix = m
        case .failure(let refusal): fail("no mount matrix: \(refusal)")
        }
        let leftEdge = try pose("To check: stand it on its left edge.", previous: screenUp, client: client, frame: frame)
        if let refusal = MountMatrixSolver.check(matrix, leftEdgeUp: leftEdge) { fail("no mount matrix: \(refusal)") }
        baseReadings?.takePose()
        let location = chosen.location.flatMap(SensorLocation.init(rawValue:))
        let record = SensorHwdbRecord(key: key, matrix: matrix, location: accelerometers.count > 1 ? location ?? .display : nil)
        print("\nACCEL_MOUNT_MATRIX=\(record.matrixValue) for \(chosen.device) (\(chosen.name)).")
        print("The entry (for systemd's hwdb.d/60-sensor.hwdb upstream, widen the DMI part with * to the model's fields):\n")
        print(record.text)
        var records = [(record, syspath)]
        if let baseReadings, let baseSensor, let baseRecord = baseReadings.record(key: baseSensor.key, display: record) {
            print(baseRecord.text)
            records.append((baseRecord, baseSensor.syspath))
        }
        // The hwdb first: motiond.conf's matrices follow the accelerometer's new one, so they are
        // written only once it is in place (a failed install exits before them).
        let mayWrite = root != nil || geteuid() == 0
        if !dryRun && mayWrite {
            for (record, syspath) in records { try install(record, in: hwdb, syspath: syspath) }
        }
        if fusing != nil {
            // The axes were checked against the accelerometer as it is read now; its new matrix turns it.
            guard let read = try? DeviceFrame.transform(mountMatrix: matrix) else { fail("motiond would not read \(record.matrixValue) as a rotation") }
            try reportAxes(of: devices, client: client, accelerometerTurn: read.matrix * frame.transposed)
        }
        if !dryRun && !mayWrite {
            print("To apply it, as root: write the \(records.count == 1 ? "entry" : "entries") to \(Self.localHwdb), then run")
            print("  systemd-hwdb update && " + records.map { "udevadm trigger --action=change \($0.1)" }.joined(separator: " && "))
        }
    }

    /// Whether the 2-in-1 with `base` folds right back into a tablet, as the base's check needs: asked
    /// where someone answers at a terminal (a detachable, or a hinge that stops at 180°, does not), else
    /// taken as so.
    static func foldsBack(_ base: DevicesReply.Device) -> Bool {
        guard Syscall.isTerminal(STDIN_FILENO) else { return true }
        print("A second accelerometer is in the base (\(base.device)). Does the machine fold right back into a tablet, screen out? [Y/n] ", terminator: "")
        guard let answer = readLine()?.trimmed().lowercased(), answer.hasPrefix("n") else { return true }
        print("The base's matrix is not checked: hold the display alone in the poses.")
        return false
    }

    /// The device's directory in sysfs, links resolved (the key's parts are read from its parents).
    static func syspath(of device: String) -> String {
        URL(fileURLWithPath: "/sys/bus/iio/devices/\(device)").resolvingSymlinksInPath().path
    }

    /// Waits for a pose held still, showing how long it has been held; returns its mean raw reading
    /// (specific force in the chip's axes, g).
    private func pose(_ instruction: String, previous: Vector3?, client: MotionClient, frame: Matrix3) throws -> Vector3 {
        print(instruction)
        let held = Mutex<Vector3?>(nil)
        let done = DispatchSemaphore(value: 0)
        var detector = StillPose(previous: previous)
        detector.duration = hold
        let detectorBox = Mutex(detector)
        let progress = ProgressLine()
        let subscription = client.watch([.accelerometer], interval: 0.05) { result in
            guard case .success(.accelerometer(let message)) = result else { return }
            // ACCELEROMETER is −specific force in motiond's frame (g); the chip's axes are frameᵀ of it.
            let raw = frame.transposed * (message.acceleration * -1)
            let state = detectorBox.withLock { $0.add(raw, at: Double(message.timestamp) * 1e-9) }
            switch state {
            case .holding(let fraction): progress.show(fraction, "hold still")
            case .notTurned: progress.show(0, "waiting for the turn")
            case .held(let mean):
                guard held.withLock({ old in defer { old = old ?? mean }; return old == nil }) else { return }
                progress.show(1, "held")
                done.signal()
            }
        }
        defer { subscription.cancel() }
        guard done.wait(timeout: .now() + timeout) == .success, let mean = held.withLock({ $0 }) else {
            print("")
            fail("the pose was not held still within \(Int(timeout)) s")
        }
        print("")
        return mean
    }

    /// Says what motiond found of the gyroscope's and the magnetometer's axes on the turns between the
    /// poses, and writes to motiond.conf's `mount_matrices` (the hwdb has no property for them) the
    /// matrix of a sensor on a chip of its own that the accelerometer's new matrix, turning its
    /// readings by `accelerometerTurn`, leaves disagreeing: a sensor that disagreed, or one that
    /// agreed with the accelerometer as it was read before.
    private func reportAxes(of devices: [DevicesReply.Device], client: MotionClient, accelerometerTurn: Matrix3) throws {
        let status = try reportingErrors { try client.status() }
        for (kind, verdict, other) in [(SensorKind.gyroscope, status.gyroscopeAxes, "accelerometer"), (.magnetometer, status.magnetometerAxes, "gyroscope")] {
            guard let device = devices.first(where: { $0.kinds.contains(kind) }), let frame = device.frameMatrix.flatMap(Self.matrix) else { continue }
            // One chip, one matrix: the hwdb's for the accelerometer turns what shares its device, and a
            // matrix for this one would turn what it shares its device with.
            let shared = [SensorKind.accelerometer, .gyroscope].first { $0 != kind && device.kinds.contains($0) }
            guard let verdict else {
                print("\nThe \(kind.rawValue)'s axes: no verdict yet (motiond needs turns about every axis); `motionctl status` gives it once there is one.")
                if shared == nil, accelerometerTurn != .identity {
                    print("The accelerometer's new matrix turns it against the \(kind.rawValue): run this again once motiond has read it.")
                }
                continue
            }
            // What comes off the socket is checked: Matrix3(rowMajor:) traps on a count other than nine.
            guard let mending = verdict.agree ? .identity : verdict.mendingMatrix.flatMap(Self.signedPermutation) else {
                print("\nmotiond sent no usable matrix for the \(kind.rawValue)'s axes: \(verdict.mendingMatrix ?? [])")
                continue
            }
            print("\nThe \(kind.rawValue)'s axes " + (verdict.agree ? "agree with the \(other)'s." : "disagree with the \(other)'s: its readings are to be multiplied by \(mending.rowMajor.map { Int($0) })."))
            if let shared {
                if !verdict.agree { print("It shares \(device.device) with the \(shared.rawValue): its driver maps them differently; report it upstream.") }
                continue
            }
            let turn = accelerometerTurn * mending
            guard turn != .identity else { continue }
            guard let matrix = DeviceFrame.mountMatrixSetting(mending: turn, frameMatrix: frame) else {
                print("That is a mirror image (its driver inverts an axis), which no mount matrix mends: report it upstream.")
                continue
            }
            let file = MountMatricesBlock(path: (root ?? "") + config)
            print("Its entry for motiond.conf, to follow the accelerometer:\n  mount_matrices:\n\(MountMatricesBlock.entry(name: device.name, matrix: matrix))")
            if dryRun { continue }
            guard root != nil || geteuid() == 0 else {
                print("To apply it, as root: add it to \(config), then run systemctl restart motiond")
                continue
            }
            do {
                switch try file.set(name: device.name, matrix: matrix) {
                case .written: print("Written to \(file.path); restart motiond (systemctl restart motiond) for it to read the matrix.")
                case .ownedByTheFile: print("\(file.path) has a mount_matrices key of its own: add the entry to it, then restart motiond.")
                case .refused(let why): print("\(file.path) is not edited: \(why). Add the entry to it yourself, then restart motiond.")
                case .unchanged: break
                }
            } catch {
                fail("cannot write \(file.path): \(error)")
            }
        }
    }

    /// A matrix from the socket: nine finite numbers, else nil.
    static func matrix(_ values: [Double]) -> Matrix3? {
        values.count == 9 && values.allSatisfy(\.isFinite) ? Matrix3(rowMajor: values) : nil
    }

    /// A mending matrix from the socket: nine numbers, each −1, 0 or 1 (the axis checks give no other).
    static func signedPermutation(_ values: [Double]) -> Matrix3? {
        values.allSatisfy({ [-1, 0, 1].contains($0) }) ? matrix(values) : nil
    }

    /// Writes `record` in place of this key's earlier one once a copy of the hwdb with it gives it
    /// for the key, compiles the hwdb, checks that the key finds it, and has udev apply it.
    private func install(_ record: SensorHwdbRecord, in hwdb: HwdbFile, syspath: String) throws {
        do {
            try hwdb.replace(record.matches[0], with: record.text, expecting: "ACCEL_MOUNT_MATRIX=\(record.matrixValue)")
        } catch let refusal as HwdbFile.Refusal {
            fail("\(hwdb.path) is not edited: \(refusal)")
        } catch {
            fail("cannot write \(hwdb.path): \(error)")
        }
        compile()
        let found = run("systemd-hwdb", rootArguments + ["query", record.matches[0]])
        guard found.output.contains("ACCEL_MOUNT_MATRIX=\(record.matrixValue)") else {
            fail("the hwdb does not give the entry for its key after the update: \(found.output)\(found.errors)")
        }
        print("Written to \(hwdb.path); the hwdb gives it for this machine's key.")
        guard root == nil else { return }
        _ = run("udevadm", ["trigger", "--action=change", "--settle", syspath])
        let properties = run("udevadm", ["info", "--query=property", "--path=\(syspath)"]).output
        if properties.contains("ACCEL_MOUNT_MATRIX=\(record.matrixValue)") {
            print("udev has applied it. Restart iio-sensor-proxy and motiond (or reboot) for them to read it.")
        } else {
            print("udev has not applied it yet: run `udevadm trigger --action=change \(syspath)`, or reboot.")
        }
    }

    /// Removes the hwdb entries of `sensors`, and the motiond.conf matrices that followed them.
    private func remove(_ sensors: [(key: SensorHwdbKey, syspath: String)], from hwdb: HwdbFile) throws {
        let conf = MountMatricesBlock(path: (root ?? "") + config)
        do {
            switch try conf.remove() {
            case .written: print("Removed from \(conf.path) the mount matrices this command wrote; restart motiond for it to read them no more.")
            case .refused(let why): print("\(conf.path) is not edited: \(why). Remove the entries after \"\(MountMatricesBlock.marker)\" yourself.")
            case .unchanged, .ownedByTheFile: break
            }
        } catch {
            fail("cannot write \(conf.path): \(error)")
        }
        let removed = sensors.filter { sensor in
            do {
                if try hwdb.replace(sensor.key.lookup, with: nil) { return true }
            } catch let refusal as HwdbFile.Refusal {
                fail("\(hwdb.path) is not edited: \(refusal)")
            } catch {
                fail("cannot write \(hwdb.path): \(error)")
            }
            print("\(hwdb.path) has no entry of this command's for \(sensor.key.lookup)")
            return false
        }
        guard !removed.isEmpty else { return }
        compile()
        for sensor in removed {
            if root == nil { _ = run("udevadm", ["trigger", "--action=change", "--settle", sensor.syspath]) }
            print("Removed the entry for \(sensor.key.lookup).")
        }
    }

    private var rootArguments: [String] { root.map { ["--root", $0] } ?? [] }

    /// `systemd-hwdb update`, once the edit was checked on a copy. What it says (it exits 0 even on
    /// a malformed file, systemd 252) is of other files, another package's or the admin's: shown as
    /// warnings, not taken for a failure of this command's.
    private func compile() {
        let update = run("systemd-hwdb", rootArguments + ["update"])
        guard update.status == 0 else { fail("systemd-hwdb update exited \(update.status): \(update.errors)") }
        for warning in update.errors.split(separator: "\n") {
            writeStandardError("motionctl: warning: systemd-hwdb: \(warning)\n")
        }
    }

    private func run(_ program: String, _ arguments: [String]) -> (status: Int32, output: String, errors: String) {
        do { return try runCapturing(program, arguments) } catch { fail("cannot run \(program): \(error)") }
    }

    private func fail(_ message: String) -> Never {
        writeStandardError("motionctl: \(message)\n")
        Glibc.exit(ExitStatus.failure)
    }
}
