import Foundation
import MotionCore
import MotionWire
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The machines Linux users have, each a umockdev fixture (Tests/TestSupport/Fixtures), run through
/// the whole daemon. Each expectation is derived by hand in the comment above it, from the pose the
/// fixture's counts stand for and docs/frames.md's rule (Linux userspace's frame after the mount
/// matrix, then a half turn about z: x and y negated). Here only what the device layer or the
/// configuration decide, end to end; what the hub makes of each machine (a)–(e) is tested on the same
/// devices, built by hand, through the hub test kit (MotionHubTests' MachineClassRulesTests).
/// Moved from `Hardware.MachineClasses` (issue 61), every test: motiond runs under umockdev-run on the
/// fixture (`ChildTestbed`), and what the test changes or reads in sysfs it changes and reads through a
/// shell beside motiond (`AttributeWriter`), so the test process makes no testbed and the suite runs
/// beside `Hardware`; its tests one at a time, as they ran there, each timing a daemon in real time.
@Suite(.serialized, .onOwnThreads) struct MachineClasses {
    /// Starts motiond on `fixture`, watches `streams` at 0.1 s, and returns the last line of each
    /// class seen within `seconds`.
    static func watch(
        _ fixture: String, streams: [String], frame: String = "xArbitraryZVertical", seconds: Double = 1.5,
        arguments: [String] = []
    ) throws -> (lines: [String: String], devices: DevicesReply) {
        let session = try Session(fixture, arguments: arguments)
        let client = session.client
        try client.send(#"{"class":"DEVICES"}"#)
        let devices = try client.decode(DevicesReply.self, try client.next("DEVICES"))
        let names = streams.map { "\"\($0)\"" }.joined(separator: ",")
        try client.send(#"{"class":"WATCH","streams":[\#(names)],"interval":0.1,"frame":"\#(frame)"}"#)
        let watching = try client.next()
        guard watching.contains("WATCHING") else { throw TestClientError("WATCH refused: \(watching)") }
        var lines: [String: String] = [:]
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            guard let line = try? client.next(seconds: max(0.01, end.timeIntervalSinceNow)) else { continue }
            if let name = Wire.className(of: Array(line.utf8)) { lines[name] = line }
        }
        return (lines, devices)
    }

    /// motiond on a fixture under umockdev-run, with a connected client; stopped when released.
    final class Session {
        /// Its sysfs attributes, written and read in motiond's testbed.
        let testbed: AttributeWriter
        let daemon: DaemonProcess
        let client: TestClient

        init(_ fixture: String, arguments: [String] = []) throws {
            testbed = try AttributeWriter()
            let state = NSTemporaryDirectory() + "motiond-state-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            daemon = try ChildTestbed(fixture: fixture).daemon(
                socket: temporarySocketPath(), arguments: ["--state-directory", state] + arguments, writer: testbed)
            client = try TestClient(path: daemon.socket)
            _ = try client.next("VERSION")
        }

        deinit { daemon.signal(SIGTERM) }
    }

    /// (g) A bare IMU board (bmi160) with no matrix anywhere, given one in motiond.conf: a chip
    /// turned 90° on the board (`0, 1, 0; -1, 0, 0; 0, 0, 1`). DEVICES names the configuration as
    /// the source, and the matrix applied is the half turn times it: (0, −1, 0; 1, 0, 0; 0, 0, 1).
    /// Moved from `Hardware.MachineClasses` (issue 61).
    @Test func bareIMUBoardTakesItsMatrixFromTheConfiguration() throws {
        let config = NSTemporaryDirectory() + "motiond-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).conf"
        try """
            mount_matrices:
              - name: bmi160
                matrix: "0, 1, 0; -1, 0, 0; 0, 0, 1"
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let (_, devices) = try Self.watch("imu-buffered", streams: ["accelerometer"], seconds: 0.1, arguments: ["--config", config])
        let device = try #require(devices.devices.first)
        #expect(device.mountMatrixSource == "config:name=bmi160")
        #expect(device.frameMatrix == [0, -1, 0, 1, 0, 0, 0, 0, 1])
        #expect(device.mountMatrixCorrection == nil)
    }

    /// The phone's bma250e (bmc150-accel) offers 15.62, 31.26, 62.5 and 125 Hz
    /// (`sampling_frequency_available`, as bmc150-accel-core.c's table lists them) and has no
    /// buffer here. An orientation watcher needs 4 readings a second while the device moves
    /// (docs/protocol.md), and fewer while it lies still (`AdaptivePolling`: 1.25): the chip is set
    /// to its slowest rate, 15.62 Hz, and read on the loop's timer. It was polled at the chip's
    /// rate, on a thread of its own: 48 wake-ups a second at rest. A turn is still reported.
    /// Moved from `Hardware.MachineClasses` (issue 61).
    @Test func aPolledAccelerometerForOrientationIsReadSlowlyAtRestAndATurnIsReported() throws {
        let session = try Session("phone")
        let client = session.client
        session.testbed.set("iio:device0", "sampling_frequency", "125")
        try client.send(#"{"class":"WATCH","streams":["orientation"]}"#)
        _ = try client.next("WATCHING")
        let before = try client.decode(OrientationMessage.self, try client.next("ORIENTATION"))
        try waitUntil { (try? session.testbed.attribute("iio:device0", "sampling_frequency"))?.hasPrefix("15.62") == true }
        var sensor: StatusReply.Sensor?
        // The rate over the capture's life falls under 2 Hz once it polls at rest (at 4 Hz it never would).
        try waitUntil(seconds: 10) {
            guard (try? client.send(#"{"class":"STATUS"}"#)) != nil, let line = try? client.next("STATUS") else { return false }
            sensor = (try? client.decode(StatusReply.self, line))?.sensors.first
            return (sensor?.measuredRate ?? .infinity) < 2
        }
        #expect(sensor?.mode == "polled" && sensor?.rate == 4, "\(String(describing: sensor))")
        // bmc150-accel names motion events, but this fixture's device has no `events/`: it polls.
        #expect(sensor?.rest == "adaptive-polling" && sensor?.restNote == "iio:device0: its driver has no motion events")
        // Onto its long edge: gravity along the chip's x, which the mount matrix turns to the
        // device's y (docs/frames.md): no longer face up.
        session.testbed.set("iio:device0", "in_accel_x_raw", "256")
        session.testbed.set("iio:device0", "in_accel_z_raw", "0")
        let after = try client.decode(OrientationMessage.self, try client.next("ORIENTATION", seconds: 5))
        #expect(after.orientation != before.orientation, "\(before.orientation) → \(after.orientation)")
    }

    /// 50 ms of `in_accel_x_raw = 2147483647` (a bus glitch) and back: the fusion used to take it
    /// as 8e7 m/s² and point gravity along x for tens of seconds (5 s later (0, 1, 0) instead of
    /// the pose's own), and saved what it learnt from it. The readings are dropped, so 1 s later
    /// gravity is where it was.
    /// Moved from `Hardware.MachineClasses` (issue 61).
    @Test func aGlitchOfImpossibleReadingsLeavesGravityWhereItWas() throws {
        let session = try Session("phone")
        let client = session.client
        try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.05}"#)
        _ = try client.next("WATCHING")
        var before: MotionMessage?
        for _ in 0..<10 { before = try client.decode(MotionMessage.self, try client.next("MOTION", seconds: 3)) }
        session.testbed.set("iio:device0", "in_accel_x_raw", "2147483647")
        // Until the daemon has read the glitch (and said so), however long that takes under load.
        #expect(session.daemon.waitForLog("sensor read failed"), "the glitch was read")
        session.testbed.set("iio:device0", "in_accel_x_raw", "10")
        let end = Date().addingTimeInterval(1)
        var after: MotionMessage?
        while Date() < end { after = try client.decode(MotionMessage.self, try client.next("MOTION", seconds: 3)) }
        let g0 = try #require(before?.gravity), g1 = try #require(after?.gravity)
        // The fixture's gyroscope reads a constant rate, so gravity creeps a little on its own:
        // within 3° (0.05 g) of before; the glitch took it about 90° (1 g) away.
        #expect((g1 - g0).length < 0.05, "gravity \(g0) before, \(g1) after")
    }
}
