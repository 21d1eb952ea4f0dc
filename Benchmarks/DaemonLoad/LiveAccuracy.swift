import Foundation
import MotionClient
import MotionCore
import MotionWire
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The live path's accuracy: BROAD trials (real IMU recordings with optical ground truth; see
/// ../shared/data/broad-dev/README.md for the credit) played through fake hardware at 1× into a
/// release motiond, whose `MOTION` stream is kept for scoring (`scripts/score-live` scores it against
/// the ground truth and against `motionctl fuse` on the identical fed data).
///
/// The hardware is the broad-imu-magnetometer fixture: a buffered IMU at the recording's 285.7 Hz, each
/// scan written to `/dev/iio:device0` at its instant with that instant as its IIO timestamp, and a
/// polled magnetometer whose `in_magn_*_raw` are rewritten in place at the instants the recording's
/// magnetometer changed (its own clock), as a driver's values change: motiond reads them when it polls.
/// Their mount matrix, a half turn about z, makes motiond's device frame the recording's IMU frame
/// (docs/frames.md: identity is Linux userspace's frame, motiond's turned by 180° about z), the frame
/// `motionctl fuse` takes the recording in.
///
/// Per trial it writes, in `output`: `<trial>_gt.csv` (the slice of the ground truth), `<trial>_fed.csv`
/// (what was fed, in the BROAD format, quantised as the fixture's counts are, the magnetometer only on
/// the rows where it changed) and `<trial>_live.csv` (t,qw,qx,qy,qz: each `MOTION` in
/// xMagneticNorthZVertical, sensor → North-West-Up, at its sample's time).
struct LiveAccuracy {
    let executable: String
    let trialsDirectory: String
    let output: String
    /// Seconds of each trial played, from `lead` s before its movement phase.
    let sliceSeconds: Double
    let lead = 10.0

    /// The fixture's scales: counts → m/s², rad/s, µT.
    static let accelerometerScale = 0.004788403
    static let gyroscopeScale = 0.00106465084
    static let magnetometerScale = 0.1  // in_magn_scale 0.001 G
    static let period = 1 / 285.714

    struct Row {
        var t: Double
        var accelerometer: [Int]
        var gyroscope: [Int]
        var magnetometer: [Int]
    }

    func run(trials: [String]) throws {
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        for trial in trials {
            let (rows, groundTruth) = try slice(trial)
            print("live: \(trial): \(rows.count) rows (\(String(format: "%.1f", rows.last!.t)) s)")
            fflush(nil)
            try write(fed: rows, to: "\(output)/\(trial)_fed.csv")
            try groundTruth.write(toFile: "\(output)/\(trial)_gt.csv", atomically: true, encoding: .utf8)
            let motion = try play(rows)
            var csv = "t,qw,qx,qy,qz\n"
            for (t, q) in motion { csv += "\(t),\(q.w),\(q.x),\(q.y),\(q.z)\n" }
            try csv.write(toFile: "\(output)/\(trial)_live.csv", atomically: true, encoding: .utf8)
            print("live: \(trial): \(motion.count) MOTION lines for \(rows.count) scans")
        }
    }

    /// The trial's rows from `lead` s before its movement phase for `sliceSeconds`, as counts, with
    /// the ground truth of the same span; times from the slice's start.
    private func slice(_ trial: String) throws -> ([Row], String) {
        let imu = try Self.gunzip("\(trialsDirectory)/\(trial)_imu.csv.gz")
        let truth = try Self.gunzip("\(trialsDirectory)/\(trial)_gt.csv.gz")
        let truthLines = truth.split(separator: "\n").dropFirst()
        guard let moving = truthLines.first(where: { $0.split(separator: ",").last == "1" }),
            let movementStart = Double(moving.split(separator: ",")[0])
        else { throw LoadError("\(trial): no movement phase in its ground truth") }
        let start = max(0, movementStart - lead), end = start + sliceSeconds
        var groundTruth = "t,qw,qx,qy,qz,movement\n"
        for line in truthLines {
            var fields = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard let t = Double(fields[0]), t >= start, t < end else { continue }
            fields[0] = String(t - start)
            groundTruth += fields.joined(separator: ",") + "\n"
        }
        var rows: [Row] = []
        for line in imu.split(separator: "\n").dropFirst() {
            let v = line.split(separator: ",").compactMap { Double($0) }
            guard v.count == 10, v[0] >= start, v[0] < end else { continue }
            rows.append(Row(
                t: v[0] - start,
                accelerometer: v[1...3].map { Int(($0 / Self.accelerometerScale).rounded()) },
                gyroscope: v[4...6].map { Int(($0 / Self.gyroscopeScale).rounded()) },
                magnetometer: v[7...9].map { Int(($0 / Self.magnetometerScale).rounded()) }))
        }
        return (rows, groundTruth)
    }

    /// What was fed, in SI units, the magnetometer on the rows where its counts changed.
    private func write(fed rows: [Row], to path: String) throws {
        var csv = "t,ax,ay,az,gx,gy,gz,mx,my,mz\n"
        var last: [Int]? = nil
        for row in rows {
            let a = row.accelerometer.map { Double($0) * Self.accelerometerScale }
            let g = row.gyroscope.map { Double($0) * Self.gyroscopeScale }
            let m = row.magnetometer != last ? row.magnetometer.map { String(Double($0) * Self.magnetometerScale) } : ["", "", ""]
            last = row.magnetometer
            csv += ([String(row.t)] + a.map { String($0) } + g.map { String($0) } + m).joined(separator: ",") + "\n"
        }
        try csv.write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// Plays `rows` into a daemon of its own; returns its `MOTION`s: (s from the slice's start, quaternion).
    private func play(_ rows: [Row]) throws -> [(Double, Quaternion)] {
        let testbed = try Testbed()
        try testbed.add(fixture: "broad-imu-magnetometer")
        let magnetometer = try ["x", "y", "z"].map { axis in
            let path = "\(testbed.root)/sys/bus/iio/devices/iio:device1/in_magn_\(axis)_raw"
            let fd = open(path, O_WRONLY)
            guard fd >= 0 else { throw LoadError("cannot open \(path)") }
            return fd
        }
        defer { magnetometer.forEach { close($0) } }
        setMagnetometer(magnetometer, rows[0].magnetometer)
        let daemon = try Daemon(executable: executable)
        let client = try LineConnection(socketPath: daemon.socket)
        _ = try client.roundTrip(
            #"{"class":"WATCH","streams":["motion"],"interval":0.001,"frame":"xMagneticNorthZVertical"}"#, until: "WATCHING")
        let deadline = Date().addingTimeInterval(5)
        while (try? testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("1") != true {
            guard Date() < deadline else { throw LoadError("motiond did not enable the IMU's buffer: \(daemon.log)") }
            usleep(1000)
        }
        usleep(200_000)  // the magnetometer's capture opens beside it
        let base = Feeder.now() + 100_000_000
        let node = testbed.controlDescriptor(for: "/dev/iio:device0")
        let feeding = Thread {
            var last = rows[0].magnetometer
            for row in rows {
                let instant = base + Int64(row.t * 1e9)
                var deadline = timespec(tv_sec: Int(instant / 1_000_000_000), tv_nsec: Int(instant % 1_000_000_000))
                while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nil) == EINTR {}
                if row.magnetometer != last {
                    setMagnetometer(magnetometer, row.magnetometer)
                    last = row.magnetometer
                }
                let scan = Testbed.imuScan(accelerometer: row.accelerometer, gyroscope: row.gyroscope, time: instant)
                _ = scan.withUnsafeBytes { Glibc.write(node, $0.baseAddress, $0.count) }
            }
        }
        feeding.qualityOfService = .userInteractive
        feeding.start()
        var motion: [(Double, Quaternion)] = []
        motion.reserveCapacity(rows.count)
        let end = base + Int64((rows.last!.t + 1) * 1e9)
        while Feeder.now() < end {
            guard let line = try? client.nextLine(timeout: 1) else { continue }
            guard case .motion(let message) = try? AnyServerMessage(line: line) else { continue }
            motion.append((Double(message.timestamp - base) * 1e-9, message.attitude.quaternion))
        }
        daemon.stop()
        return motion
    }

    /// Rewrites the magnetometer's three values in place, as its driver's change: one `pwrite` of a
    /// fixed width each, so that a reader never sees a half-written file.
    private func setMagnetometer(_ descriptors: [Int32], _ counts: [Int]) {
        for (fd, count) in zip(descriptors, counts) {
            let text = Array(String(format: "%6d\n", count).utf8)
            _ = pwrite(fd, text, text.count, 0)
        }
    }

    static func gunzip(_ path: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/gzip")
        process.arguments = ["-dc", path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw LoadError("gzip -dc \(path) failed") }
        return String(decoding: data, as: UTF8.self)
    }
}
