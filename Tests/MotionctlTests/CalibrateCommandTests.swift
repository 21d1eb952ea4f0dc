import Foundation
import MotionWire
import Testing
import TestSupport

/// `motionctl calibrate` and the calibration state, on a fake bmi160 (umockdev, imu-buffered:
/// gyroscope scale 0.001065 rad/s per count, no mount matrix) lying still with a bias.
/// Moved from `Hardware.CalibrateCommand` (issue 61): motiond and motionctl run under umockdev-run,
/// the scans given as what the buffer's node gives once motiond opens it (`ChildTestbed(reads:)`),
/// the buffer's enable read through the shell beside motiond (`AttributeWriter`).
@Suite(.onOwnThreads) struct CalibrateCommand {
    /// Moved from `Hardware.CalibrateCommand` (issue 61).
    @Test func aStillDeviceBecomesCalibratedAndTheCommandSaysSo() async throws {
        // 6 s of stillness at 100 Hz, by the scans' own timestamps: face up, gyroscope reading
        // (3, −2, 1) counts, a bias of (3.2, −2.1, 1.1) mrad/s in the chip's frame. The node gives 6 s
        // of them at once as it is opened, then a second's worth each second for a minute: a buffer
        // that fell silent once the first were read would be re-armed (issue 62) and, giving nothing
        // after it, polled from the fixture's sysfs values, which a loaded machine reached before STATUS.
        func scans(_ steps: ClosedRange<Int>) -> [UInt8] {
            steps.flatMap { Testbed.imuScan(accelerometer: [0, 0, 16384], gyroscope: [3, -2, 1], time: Int64($0) * 10_000_000) }
        }
        let reads = [(0, scans(1...600))] + (0..<60).map { (1000, scans(601 + $0 * 100...700 + $0 * 100)) }
        let machine = try ChildTestbed(fixture: "imu-buffered", reads: ["/dev/iio:device0": reads]), testbed = try AttributeWriter()
        let socket = NSTemporaryDirectory() + "calibrate-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        let daemon = try machine.daemon(socket: socket, writer: testbed)
        let watcher = try TestClient.greeted(path: socket)
        try watcher.send(#"{"class":"WATCH","streams":["motion"],"interval":0.01}"#)
        _ = try watcher.next("WATCHING")
        try waitUntil { (try? testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("1") == true }
        #expect(daemon.waitForLog("gyroscope calibrated", seconds: 10), "the log says when the gyroscope is calibrated")

        // On the machine without the scans: umockdev-run waits for a script's node that its program never opens.
        let run = try await ChildTestbed(fixture: "imu-buffered").run(
            ReplayDaemon.products.appendingPathComponent("motionctl").path, ["calibrate", "--socket", socket, "--timeout", "10"])
        #expect(run.status == 0 && run.output.contains("calibrated: bias"), "\(run.output) \(run.errors)")

        try watcher.send(#"{"class":"STATUS"}"#)
        let status = try watcher.decode(StatusReply.self, try watcher.next("STATUS"))
        let calibration = try #require(status.calibration)
        #expect(calibration.gyroscopeCalibrated == true)
        #expect((calibration.gyroscopeBiasUncertainty ?? 1) <= StatusReply.Calibration.calibratedUncertainty)
        // Linux userspace's frame is motiond's turned half a turn about z (docs/frames.md): x and y flip.
        let expected = (x: -3 * 0.001065, y: 2 * 0.001065, z: 1 * 0.001065)
        let b = calibration.gyroscopeBias
        let tolerance = 0.05 * Double.pi / 180
        #expect(abs(b.x - expected.x) < tolerance && abs(b.y - expected.y) < tolerance && abs(b.z - expected.z) < tolerance, "bias \(b), expected \(expected)")
        _ = daemon.secondsToExit(after: SIGTERM)
    }
}

/// `motionctl calibrate magnetometer` on the bundled recording (BROAD's IMU turned slowly through
/// many directions), played 4 times as fast: plain progress lines (the output is no terminal) of the
/// directions seen, rising, until motiond's accuracy is high enough; then the offset.
@Suite struct CalibrateMagnetometerCommand {
    @Test func theCompassIsCalibratedOnTheRecordingWithProgressShown() async throws {
        let daemon = try ReplayDaemon(arguments: ["--loop", "--speed", "4"])
        let run = try await runProgram(
            ReplayDaemon.products.appendingPathComponent("motionctl").path, ["calibrate", "magnetometer", "--socket", daemon.socket, "--timeout", "60"])
        #expect(run.status == 0 && run.output.contains("calibrated: offset"), "\(run.output) \(run.errors)")
        let seen = run.output.split(separator: "\n").compactMap { line in
            line.firstRange(of: "] ").flatMap { Int(line[$0.upperBound...].prefix { $0.isNumber }) }
        }
        // The coverage grows while it is shown (a line is printed only when it changes, so the order alone proves little).
        // How far it is seen to grow is not bounded: it counts the directions of the samples that reached
        // motionctl, and a CI run of the full suite on two cores showed calibrated at under 50 %, the
        // starved client having been sent fewer of them than motiond calibrated on.
        #expect(seen.count >= 3 && seen == seen.sorted() && seen.first! < seen.last!, "\(run.output)")
        #expect(!run.output.contains("\r"), "plain lines where the output is no terminal")
    }
}
