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
/// matrix, then a half turn about z: x and y negated).
extension Hardware {
    @Suite struct MachineClasses {
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

        /// motiond on a fixture, with a connected client; stopped when released.
        final class Session {
            let testbed: Testbed
            let daemon: DaemonProcess
            let client: TestClient

            init(_ fixture: String, arguments: [String] = []) throws {
                testbed = try Testbed()
                try testbed.add(fixture: fixture)
                let state = NSTemporaryDirectory() + "motiond-state-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
                daemon = try DaemonProcess(socket: Hardware.Server.socketPath(), arguments: ["--state-directory", state] + arguments)
                client = try TestClient(path: daemon.socket)
                _ = try client.next("VERSION")
            }

            deinit { daemon.signal(SIGTERM) }
        }

        static func motion(_ lines: [String: String]) throws -> MotionMessage {
            try Wire.decode(MotionMessage.self, from: Array(try #require(lines["MOTION"]).utf8))
        }

        /// (a) A laptop lid with an HID sensor hub accelerometer (`accel_3d`: shared scale, offset,
        /// hysteresis), no gyroscope, no magnetometer. The lid stands upright leaning back 30°:
        /// Linux userspace reads (0, −cos 30°, sin 30°) g = (0, −866, 500) mg, and with the offset of
        /// 2 counts the raw values are (−2, −868, 498). In motiond's frame the specific force is
        /// (0, 866, 500) mg, so gravity is (0, −0.866, −0.5) g, pitch +60°, roll 0; orientation
        /// `normal` (top edge up), tilt `tilted-up` (the screen 30° above the vertical).
        @Test func laptopWithAnHIDAccelerometerGetsGravityTiltAndOrientationAndIsToldYawIsUnavailable() throws {
            let (lines, devices) = try Self.watch("laptop-hid-accelerometer", streams: ["motion", "orientation", "tilt"])
            #expect(devices.devices.first?.location == "display")
            let motion = try Self.motion(lines)
            #expect((motion.gravity - Vector3(x: 0, y: -0.866025, z: -0.5)).length < 0.005, "\(motion.gravity)")
            #expect(abs(motion.attitude.pitch * 180 / .pi - 60) < 0.5)
            #expect(abs(motion.attitude.roll) < 0.01)
            #expect(motion.unavailable == [.yaw, .rotationRate, .magneticField])
            #expect(lines["MOTION"]?.contains(#""yaw":"yaw needs a magnetometer or a gyroscope""#) == true)
            #expect(lines["ORIENTATION"]?.contains(#""orientation":"normal""#) == true)
            #expect(lines["TILT"]?.contains(#""tilt":"tilted-up""#) == true)
        }

        /// STATUS says what the machine cannot give before anything is watched: the laptop of (a) has
        /// one accelerometer and nothing else, so every other sensor's stream (light and altitude too), the hinge, and the
        /// yaw, rotation rate, magnetic field and heading of motion (the reasons as in protocol.md).
        @Test func statusSaysWhatALaptopWithOnlyAnAccelerometerCannotGiveAndWhy() throws {
            let session = try Session("laptop-hid-accelerometer")
            try session.client.send(#"{"class":"STATUS"}"#)
            let status = try session.client.decode(StatusReply.self, try session.client.next("STATUS"))
            let unavailable = try #require(status.unavailable)
            #expect(unavailable.streams.keys.sorted() == ["altitude", "gyroscope", "hinge", "light", "magnetometer", "proximity"])
            #expect(unavailable.streams["altitude"] == "altitude needs a sensor this machine does not have: pressure")
            #expect(unavailable.streams["gyroscope"] == "gyroscope needs a sensor this machine does not have: gyroscope")
            #expect(unavailable.streams["hinge"] == "hinge needs two accelerometers, one in the display and one in the base")
            #expect(unavailable.motion == [.yaw, .rotationRate, .magneticField, .heading])
        }

        /// (b) A 2-in-1 with two accelerometers (cros-ec: `label` accel-display / accel-base,
        /// `location` lid / base), lid opened to 120° over a base lying flat, keyboard up. By the
        /// hwdb's definition of a base sensor (shut, both read the same), the base's specific force is
        /// (0, 0, −1) g in its frame and the display's (0, sin 120°, −cos 120°) = (0, 0.866, 0.5) g;
        /// in Linux userspace's frame (x, y negated) that is (0, 0, −1000) and (0, −866, 500) counts.
        /// Expected: hinge 120°, `laptop`; orientation `normal` from the display (the base alone would
        /// say face-down).
        @Test func convertibleWithTwoAccelerometersGetsItsHingeAndTheDisplaysOrientation() throws {
            let (lines, devices) = try Self.watch("convertible-two-accelerometers", streams: ["hinge", "orientation", "tilt"])
            #expect(devices.devices.map { $0.location } == ["display", "base"])
            #expect(devices.devices.map { $0.label } == ["accel-display", "accel-base"])
            let hinge = try Wire.decode(HingeMessage.self, from: Array(try #require(lines["HINGE"]).utf8))
            #expect(abs(hinge.angle - 120) < 0.5, "\(hinge.angle)°")
            #expect(hinge.mode == .laptop)
            #expect(lines["ORIENTATION"]?.contains(#""orientation":"normal""#) == true)
            #expect(lines["TILT"]?.contains(#""tilt":"tilted-up""#) == true)
        }

        @Test func theHingeOfAMachineWithOneAccelerometerIsRefusedWithItsReason() throws {
            let session = try Session("laptop-hid-accelerometer")
            let client = session.client
            try client.send(#"{"class":"WATCH","streams":["hinge"]}"#)
            let error = try client.decode(ErrorReply.self, try client.next("ERROR"))
            #expect(error.message == "hinge needs two accelerometers, one in the display and one in the base")
        }

        /// (c) A tablet with an accelerometer and a magnetometer on separate devices, no gyroscope,
        /// lying face up with its top edge pointing east. The Earth's field (19 µT north, 46 µT down,
        /// ENU (0, 19, −46)) in the device frame (x south, y east, z up) is (−19, 0, −46) µT; Linux
        /// userspace's frame negates x and y: (19, 0, −46) µT = (190, 0, −460) counts of 0.001 G.
        /// Expected: heading 90°, gravity (0, 0, −1) g, and only the rotation rate unavailable.
        @Test func tabletWithAnAccelerometerAndAMagnetometerGetsItsCompassHeading() throws {
            let (lines, _) = try Self.watch("tablet-accelerometer-magnetometer", streams: ["motion"], frame: "xMagneticNorthZVertical")
            let motion = try Self.motion(lines)
            let heading = try #require(motion.heading)
            #expect(abs(heading - 90) < 1, "heading \(heading)°")
            #expect((motion.gravity - Vector3(x: 0, y: 0, z: -1)).length < 0.005)
            #expect(motion.unavailable == [.rotationRate])
            #expect((motion.magneticField.field - Vector3(x: -19, y: 0, z: -46)).length < 0.5, "\(motion.magneticField.field)")
        }

        /// (c) turned: the same tablet, still, turned in an instant a quarter turn to the left (its
        /// top edge from east to north: the field in Linux userspace's frame goes from (19, 0, −46)
        /// to (0, −19, −46) µT), then still again. The compass, with no gyroscope to tell it the
        /// device turned, reaches the new heading (0°) within 3° in 0.5 s; the heading at rest before
        /// the turn wanders less than 0.5° (the polled values repeat exactly, as a still chip's do).
        @Test func aCompassWithoutAGyroscopeFollowsAQuarterTurnWithinHalfASecond() throws {
            let session = try Session("tablet-accelerometer-magnetometer")
            let client = session.client
            try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.02,"frame":"xMagneticNorthZVertical"}"#)
            _ = try client.next("WATCHING")
            var atRest: [Double] = []
            let settled = Date().addingTimeInterval(2)
            while Date() < settled {
                let motion = try client.decode(MotionMessage.self, try client.next("MOTION"))
                if let heading = motion.heading { atRest.append(heading) }
            }
            let early = atRest.suffix(25)
            #expect(early.allSatisfy { abs($0 - 90) < 0.5 }, "at rest: \(early)")
            try session.testbed.setAttribute("iio:device1", "in_magn_x_raw", "0\n")
            try session.testbed.setAttribute("iio:device1", "in_magn_y_raw", "-190\n")
            let turned = Date()
            var reached: Double?
            var after: [(Double, Double)] = []
            while Date().timeIntervalSince(turned) < 3 {
                let motion = try client.decode(MotionMessage.self, try client.next("MOTION"))
                guard let heading = motion.heading else { continue }
                let since = Date().timeIntervalSince(turned)
                after.append((since, heading))
                if reached == nil, abs(remainder(heading, 360)) < 3 { reached = since }
            }
            let within = try #require(reached, "never within 3° of 0°: \(after.map { "\($0.0.formatted(.number.precision(.fractionLength(2)))) s \($0.1.formatted(.number.precision(.fractionLength(1))))°" })")
            #expect(within < 0.5, "\(within) s")
            // And it stays there.
            #expect(after.filter { $0.0 > within + 0.5 }.allSatisfy { abs(remainder($0.1, 360)) < 3 })
        }

        /// (d) A phone: an IMU (mpu6050) read through its buffer at 100 Hz and a magnetometer (af8133j)
        /// polled at 25 Hz, each with its device tree's `in_mount_matrix`: the IMU's chip turned 90°
        /// (`0, 1, 0; -1, 0, 0; 0, 0, 1`), the magnetometer's as in sun50i-a64-pinephone-1.2b.dts
        /// (`0, -1, 0; -1, 0, 0; 0, 0, -1`, a chip on the back). The phone lies face up, its top edge
        /// raised 30° and pointing east. Device frame (x south, y east-and-up, z the screen's normal):
        /// specific force (0, sin 30°, cos 30°) g; the Earth's field ENU (0, 19, −46) µT reads
        /// (−19, −46 sin 30°, −46 cos 30°) = (−19, −23, −39.84) µT. Linux userspace's frame negates x
        /// and y; the chips read the transpose of their matrix times that: accelerometer
        /// (500, 0, 866) mg = (8192, 0, 14189) counts of 0.000598 m/s²; magnetometer
        /// (−23, −19, 39.84) µT = (−230, −190, 398) counts of 0.001 G.
        /// Expected: gravity (0, −0.5, −0.866) g, heading 90°.
        ///
        /// The scans reach motiond 8–28 ms after their timestamps while the magnetometer is stamped
        /// when read, as on real machines. Every output must carry the time of its IMU scan, and the
        /// samples must be fused (and so sent) in time order.
        @Test func phoneWithABufferedIMUAndAPolledMagnetometerFusesInTimeOrder() throws {
            let session = try Session("phone-buffered-imu-magnetometer")
            let client = session.client
            try client.send(#"{"class":"WATCH","streams":["motion","magnetometer"],"interval":0.01,"frame":"xMagneticNorthZVertical"}"#)
            _ = try client.next("WATCHING")
            try waitUntil { (try? session.testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("1") == true }
            #expect(try session.testbed.attribute("iio:device0", "current_timestamp_clock").hasPrefix("monotonic"))

            func monotonic() -> Int64 {
                var now = timespec()
                clock_gettime(CLOCK_MONOTONIC, &now)
                return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
            }
            let period: Int64 = 10_000_000
            var next = monotonic() / period * period
            var fed: Set<Int64> = []
            var received: [(name: String, timestamp: Int64)] = []
            var lastMotion: MotionMessage?
            let end = Date().addingTimeInterval(3)
            while Date() < end {
                var bytes: [UInt8] = []
                while next <= monotonic() - 8_000_000 {
                    bytes += Testbed.imuScan(accelerometer: [8192, 0, 14189], gyroscope: [0, 0, 0], time: next)
                    fed.insert(next)
                    next += period
                }
                if !bytes.isEmpty { try session.testbed.feed("/dev/iio:device0", bytes) }
                // Read for 10 ms, then feed again: the magnetometer's lines alone never let up.
                let feedAgain = Date().addingTimeInterval(0.01)
                while Date() < feedAgain, let line = try? client.next(seconds: max(0.001, feedAgain.timeIntervalSinceNow)) {
                    switch Wire.className(of: Array(line.utf8)) {
                    case "MOTION":
                        let motion = try client.decode(MotionMessage.self, line)
                        received.append(("MOTION", motion.timestamp))
                        lastMotion = motion
                    case "MAGNETOMETER":
                        received.append(("MAGNETOMETER", try client.decode(MagnetometerMessage.self, line).timestamp))
                    default: break
                    }
                }
            }
            let motions = received.filter { $0.name == "MOTION" }.map(\.timestamp)
            #expect(motions.count > 150, "100 Hz for 3 s")
            #expect(motions.allSatisfy { fed.contains($0) }, "each motion carries the time of an IMU scan")
            #expect(zip(motions, motions.dropFirst()).allSatisfy { $0 < $1 }, "no timestamp repeated or out of order")
            #expect(received.filter { $0.name == "MAGNETOMETER" }.count > 60, "polled at 25 Hz or more for 3 s")
            let outOfOrder = zip(received, received.dropFirst()).filter { $0.timestamp > $1.timestamp }
            #expect(outOfOrder.isEmpty, "fused in time order: \(outOfOrder.prefix(3))")

            let motion = try #require(lastMotion)
            #expect((motion.gravity - Vector3(x: 0, y: -0.5, z: -0.866025)).length < 0.01, "\(motion.gravity)")
            let heading = try #require(motion.heading)
            #expect(abs(heading - 90) < 2, "heading \(heading)°")
            #expect(motion.unavailable == nil)
        }

        /// (e) A Bosch accelerometer with the hwdb's most common kind of entry, a mirror
        /// (`1, 0, 0; 0, -1, 0; 0, 0, 1`, determinant −1): the chip faces the back, so lying face up
        /// it reads z = −1 g (−1000 counts). The hwdb's x and y rows are kept and the z row becomes
        /// x × y = (0, 0, −1): motiond reports face up, gravity (0, 0, −1) g. (iio-sensor-proxy 3.6+,
        /// which applies the matrix as written, calls this pose face-down: docs/frames.md.)
        @Test func boschAccelerometerWithAMirrorMatrixIsFaceUpWhenFaceUp() throws {
            let (lines, devices) = try Self.watch("tablet-bosch-mirror-matrix", streams: ["motion", "tilt"])
            let device = try #require(devices.devices.first)
            #expect(device.mountMatrixSource == "udev:ACCEL_MOUNT_MATRIX")
            #expect(device.mountMatrix == [1, 0, 0, 0, -1, 0, 0, 0, 1])
            #expect(device.frameMatrix == [-1, 0, 0, 0, 1, 0, 0, 0, -1])
            #expect(device.mountMatrixCorrection?.contains("determinant is -1") == true)
            let motion = try Self.motion(lines)
            #expect((motion.gravity - Vector3(x: 0, y: 0, z: -1)).length < 0.005, "\(motion.gravity)")
            #expect(lines["TILT"]?.contains(#""tilt":"face-up""#) == true)
        }

        /// (g) A bare IMU board (bmi160) with no matrix anywhere, given one in motiond.conf: a chip
        /// turned 90° on the board (`0, 1, 0; -1, 0, 0; 0, 0, 1`). DEVICES names the configuration as
        /// the source, and the matrix applied is the half turn times it: (0, −1, 0; 1, 0, 0; 0, 0, 1).
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
        @Test func aPolledAccelerometerForOrientationIsReadSlowlyAtRestAndATurnIsReported() throws {
            let session = try Session("phone")
            let client = session.client
            try session.testbed.setAttribute("iio:device0", "sampling_frequency", "125\n")
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
            try session.testbed.setAttribute("iio:device0", "in_accel_x_raw", "256\n")
            try session.testbed.setAttribute("iio:device0", "in_accel_z_raw", "0\n")
            let after = try client.decode(OrientationMessage.self, try client.next("ORIENTATION", seconds: 5))
            #expect(after.orientation != before.orientation, "\(before.orientation) → \(after.orientation)")
        }

        /// A phone whose gyroscope goes away (unplugged, or its driver unbound) while motion is
        /// watched: motion goes on from the accelerometer and the magnetometer, and says the rotation
        /// rate is now unavailable, instead of falling silent.
        @Test func motionGoesOnWithoutTheGyroscopeWhenItIsUnplugged() throws {
            let session = try Session("phone")
            let client = session.client
            try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.1}"#)
            _ = try client.next("WATCHING")
            let before = try client.decode(MotionMessage.self, try client.next("MOTION", seconds: 3))
            #expect(before.unavailable == nil, "all three sensors: nothing unavailable")
            session.testbed.remove(syspath: "/sys/devices/platform/i2c-1/1-0068/iio:device1")
            // The next motions, from the accelerometer alone, say what is missing.
            var after: MotionMessage?
            let end = Date().addingTimeInterval(5)
            while Date() < end, after?.unavailable?.contains(.rotationRate) != true {
                after = try client.decode(MotionMessage.self, try client.next("MOTION", seconds: 3))
            }
            #expect(after?.unavailable == [.rotationRate])
            _ = try client.decode(MotionMessage.self, try client.next("MOTION", seconds: 3))
        }

        /// 50 ms of `in_accel_x_raw = 2147483647` (a bus glitch) and back: the fusion used to take it
        /// as 8e7 m/s² and point gravity along x for tens of seconds (5 s later (0, 1, 0) instead of
        /// the pose's own), and saved what it learnt from it. The readings are dropped, so 1 s later
        /// gravity is where it was.
        @Test func aGlitchOfImpossibleReadingsLeavesGravityWhereItWas() throws {
            let session = try Session("phone")
            let client = session.client
            try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.05}"#)
            _ = try client.next("WATCHING")
            var before: MotionMessage?
            for _ in 0..<10 { before = try client.decode(MotionMessage.self, try client.next("MOTION", seconds: 3)) }
            try session.testbed.setAttribute("iio:device0", "in_accel_x_raw", "2147483647\n")
            // Until the daemon has read the glitch (and said so), however long that takes under load.
            #expect(session.daemon.waitForLog("sensor read failed"), "the glitch was read")
            try session.testbed.setAttribute("iio:device0", "in_accel_x_raw", "10\n")
            let end = Date().addingTimeInterval(1)
            var after: MotionMessage?
            while Date() < end { after = try client.decode(MotionMessage.self, try client.next("MOTION", seconds: 3)) }
            let g0 = try #require(before?.gravity), g1 = try #require(after?.gravity)
            // The fixture's gyroscope reads a constant rate, so gravity creeps a little on its own:
            // within 3° (0.05 g) of before; the glitch took it about 90° (1 g) away.
            #expect((g1 - g0).length < 0.05, "gravity \(g0) before, \(g1) after")
        }

        /// Motion watched, then nobody watches (the sensors close), the phone is turned a quarter
        /// about its long axis, and motion is watched again: the first motions must describe the
        /// new pose. The fusion used to resume from the attitude it had when the sensors closed, so
        /// against the new accelerometer reading it reported about 1 g of user acceleration for a
        /// second.
        @Test func motionAfterTheSensorsIdledDescribesThePoseNowNotTheOldOne() throws {
            let session = try Session("phone")
            let client = session.client
            try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.05}"#)
            _ = try client.next("WATCHING")
            for _ in 0..<10 { _ = try client.next("MOTION", seconds: 3) }
            try client.send(#"{"class":"WATCH","enable":false}"#)
            _ = try client.next("WATCHING")
            try waitUntil { (try? client.send(#"{"class":"STATUS"}"#)) != nil && (try? client.decode(StatusReply.self, client.next("STATUS")))?.sensors.isEmpty == true }
            // The chip's z (up when face up) now lies along its x: the phone stands on its side.
            try session.testbed.setAttribute("iio:device0", "in_accel_x_raw", "256\n")
            try session.testbed.setAttribute("iio:device0", "in_accel_z_raw", "10\n")
            try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.05}"#)
            _ = try client.next("WATCHING")
            let first = try client.decode(MotionMessage.self, try client.next("MOTION", seconds: 3))
            #expect(first.userAcceleration.length < 0.1, "user acceleration \(first.userAcceleration) g at rest")
        }

        /// A gyroscope alone gives its rotation rate, and motion is refused with the reason.
        @Test func motionOnAMachineWithoutAnAccelerometerIsRefusedWithItsReason() throws {
            let session = try Session("gyroscope-only")
            let client = session.client
            try client.send(#"{"class":"WATCH","streams":["motion"]}"#)
            let error = try client.decode(ErrorReply.self, try client.next("ERROR"))
            #expect(error.code == .unavailable)
            #expect(error.message == "motion needs a sensor this machine does not have: accelerometer")
            try client.send(#"{"class":"POLL","streams":["gyroscope"]}"#)
            let snapshot = try client.decode(Snapshot.self, try client.next("SNAPSHOT"))
            // 100 counts × 0.000152716 rad/s on x, negated into the device frame.
            #expect(abs((snapshot.gyroscope?.rotationRate.x ?? 0) + 0.0152716) < 1e-6)
        }
    }
}
