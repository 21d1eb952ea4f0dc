import Foundation
import HubTestKit
import MotionCore
import MotionDevices
import MotionWire
import NIOCore
import Testing

@testable import MotionHub

/// The machines Linux users have, each as its umockdev fixture describes it (`Machines`), its sensors
/// reading the fixture's counts, through the whole hub. Each expectation is derived by hand in the
/// comment above it, from the pose the counts stand for and docs/frames.md's rule (Linux userspace's
/// frame after the mount matrix, then a half turn about z: x and y negated). Moved from
/// Hardware.MachineClasses (now MachineClasses, on testbeds of umockdev-run's), which keeps what only
/// the device layer or the configuration decide.
@Suite struct MachineClassRulesTests {
    /// Starts a hub on `devices` reading `counts`, watches `streams` at 0.1 s in `frame` for 1.5 s of
    /// the loop's clock, and returns the client (keeping lines) and the DEVICES reply.
    static func watch(
        _ devices: [DeviceDescriptor], counts: [DeviceNumber: [SensorKind: Vector3]], streams: [String],
        frame: String = "xArbitraryZVertical"
    ) async throws -> (ScriptedHub, ScriptedHub.Client, DevicesReply) {
        let scripted = try await ScriptedHub(devices: devices)
        scripted.source.counts.withLock { $0 = counts }
        let (client, id) = try await scripted.connect(keepingLines: true)
        try await scripted.send(line: #"{"class":"DEVICES"}"#, from: id)
        let names = streams.map { "\"\($0)\"" }.joined(separator: ",")
        try await scripted.send(line: #"{"class":"WATCH","streams":[\#(names)],"interval":0.1,"frame":"\#(frame)"}"#, from: id)
        guard client.errors.isEmpty else { throw ScriptedHubError("WATCH refused: \(client.errors)") }
        await scripted.run(for: .milliseconds(1500))
        return (scripted, client, try #require(client.deviceReplies.last))
    }

    /// (a) A laptop lid with an HID sensor hub accelerometer (`accel_3d`: shared scale, offset), no
    /// gyroscope, no magnetometer. The lid stands upright leaning back 30°: Linux userspace reads
    /// (0, −cos 30°, sin 30°) g = (0, −866, 500) mg, and with the offset of 2 counts the raw values
    /// are (−2, −868, 498). In motiond's frame the specific force is (0, 866, 500) mg, so gravity is
    /// (0, −0.866, −0.5) g, pitch +60°, roll 0; orientation `normal` (top edge up), tilt `tilted-up`
    /// (the screen 30° above the vertical).
    @Test func laptopWithAnHIDAccelerometerGetsGravityTiltAndOrientationAndIsToldYawIsUnavailable() async throws {
        let laptop = Machines.laptop
        let (scripted, client, devices) = try await Self.watch(
            [laptop], counts: [laptop.number: [.accelerometer: Vector3(x: -2, y: -868, z: 498)]], streams: ["motion", "orientation", "tilt"])
        #expect(devices.devices.first?.location == "display")
        let motion = try #require(client.motions.last)
        #expect((motion.gravity - Vector3(x: 0, y: -0.866025, z: -0.5)).length < 0.005, "\(motion.gravity)")
        #expect(abs(motion.attitude.pitch * 180 / .pi - 60) < 0.5)
        #expect(abs(motion.attitude.roll) < 0.01)
        #expect(motion.unavailable == [.yaw, .rotationRate, .magneticField])
        #expect(client.lastLine("MOTION")?.contains(#""yaw":"yaw needs a magnetometer or a gyroscope""#) == true)
        #expect(client.orientations.last?.orientation == .normal)
        #expect(client.tilts.last?.tilt == .tiltedUp)
        try await scripted.shutDown()
    }

    /// (b) A 2-in-1 with two accelerometers (cros-ec: `label` accel-display / accel-base, `location`
    /// lid / base), lid opened to 120° over a base lying flat, keyboard up. By the hwdb's definition
    /// of a base sensor (shut, both read the same), the base's specific force is (0, 0, −1) g in its
    /// frame and the display's (0, sin 120°, −cos 120°) = (0, 0.866, 0.5) g; in Linux userspace's frame
    /// (x, y negated) that is (0, 0, −1000) and (0, −866, 500) counts. Expected: hinge 120°, `laptop`;
    /// orientation `normal` from the display (the base alone would say face-down).
    @Test func convertibleWithTwoAccelerometersGetsItsHingeAndTheDisplaysOrientation() async throws {
        let (display, base) = (Machines.convertibleDisplay, Machines.convertibleBase)
        let counts = Machines.convertibleCounts(hinge: 120)
        let (scripted, client, devices) = try await Self.watch(
            [display, base], counts: [display.number: [.accelerometer: counts.display], base.number: [.accelerometer: counts.base]],
            streams: ["hinge", "orientation", "tilt"])
        #expect(devices.devices.map { $0.location } == ["display", "base"])
        #expect(devices.devices.map { $0.label } == ["accel-display", "accel-base"])
        let hinge = try #require(client.hinges.last)
        #expect(abs(hinge.angle - 120) < 0.5, "\(hinge.angle)°")
        #expect(hinge.mode == .laptop)
        #expect(client.orientations.last?.orientation == .normal)
        #expect(client.tilts.last?.tilt == .tiltedUp)
        try await scripted.shutDown()
    }

    /// The tablet of (c): its accelerometer (0, 0, 1000) counts, lying face up.
    static let tabletAtRest: [DeviceNumber: [SensorKind: Vector3]] = [
        Machines.tabletAccelerometer.number: [.accelerometer: Vector3(x: 0, y: 0, z: 1000)],
        Machines.tabletMagnetometer.number: [.magnetometer: Vector3(x: 190, y: 0, z: -460)],
    ]

    /// (c) A tablet with an accelerometer and a magnetometer on separate devices, no gyroscope, lying
    /// face up with its top edge pointing east. The Earth's field (19 µT north, 46 µT down, ENU
    /// (0, 19, −46)) in the device frame (x south, y east, z up) is (−19, 0, −46) µT; Linux
    /// userspace's frame negates x and y: (19, 0, −46) µT = (190, 0, −460) counts of 0.001 G.
    /// Expected: heading 90°, gravity (0, 0, −1) g, and only the rotation rate unavailable.
    @Test func tabletWithAnAccelerometerAndAMagnetometerGetsItsCompassHeading() async throws {
        let (scripted, client, _) = try await Self.watch(
            [Machines.tabletAccelerometer, Machines.tabletMagnetometer], counts: Self.tabletAtRest, streams: ["motion"],
            frame: "xMagneticNorthZVertical")
        let motion = try #require(client.motions.last)
        let heading = try #require(motion.heading)
        #expect(abs(heading - 90) < 1, "heading \(heading)°")
        #expect((motion.gravity - Vector3(x: 0, y: 0, z: -1)).length < 0.005)
        #expect(motion.unavailable == [.rotationRate])
        #expect((motion.magneticField.field - Vector3(x: -19, y: 0, z: -46)).length < 0.5, "\(motion.magneticField.field)")
        try await scripted.shutDown()
    }

    /// (c) turned: the same tablet, still, turned in an instant a quarter turn to the left (its top
    /// edge from east to north: the field in Linux userspace's frame goes from (19, 0, −46) to
    /// (0, −19, −46) µT), then still again. The compass, with no gyroscope to tell it the device
    /// turned, reaches the new heading (0°) within 3° in 0.5 s; the heading at rest before the turn
    /// wanders less than 0.5° (the polled values repeat exactly, as a still chip's do).
    @Test func aCompassWithoutAGyroscopeFollowsAQuarterTurnWithinHalfASecond() async throws {
        let magnetometer = Machines.tabletMagnetometer.number
        let scripted = try await ScriptedHub(devices: [Machines.tabletAccelerometer, Machines.tabletMagnetometer])
        scripted.source.counts.withLock { $0 = Self.tabletAtRest }
        let (client, id) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["motion"],"interval":0.02,"frame":"xMagneticNorthZVertical"}"#, from: id)
        await scripted.run(for: .seconds(2))
        let early = client.motions.compactMap(\.heading).suffix(25)
        #expect(early.count == 25 && early.allSatisfy { abs($0 - 90) < 0.5 }, "at rest: \(early)")
        scripted.source.counts.withLock { $0[magnetometer] = [.magnetometer: Vector3(x: 0, y: -190, z: -460)] }
        let turned = client.motions.count
        let within = await scripted.advance(upTo: .seconds(3)) {
            client.motions.dropFirst(turned).contains { $0.heading.map { abs(remainder($0, 360)) < 3 } == true }
        }
        let reached = try #require(within, "never within 3° of 0°: \(client.motions.dropFirst(turned).compactMap(\.heading))")
        #expect(reached < .milliseconds(500), "\(reached)")
        // And it stays there.
        let settled = client.motions.count
        await scripted.run(for: .milliseconds(2500))
        #expect(client.motions.dropFirst(settled).compactMap(\.heading).allSatisfy { abs(remainder($0, 360)) < 3 })
        try await scripted.shutDown()
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
    /// The scans reach the hub 8–18 ms after their timestamps while the magnetometer is stamped when
    /// read, as on real machines. Every output must carry the time of its IMU scan, and the samples
    /// must be fused (and so sent) in time order.
    @Test func phoneWithABufferedIMUAndAPolledMagnetometerFusesInTimeOrder() async throws {
        let (imu, magnetometer) = (Machines.phoneIMU, Machines.phoneMagnetometer)
        let scripted = try await ScriptedHub(devices: [imu, magnetometer])
        scripted.source.counts.withLock { $0[magnetometer.number] = [.magnetometer: Vector3(x: -230, y: -190, z: 398)] }
        let (client, id) = try await scripted.connect()
        try await scripted.send(
            line: #"{"class":"WATCH","streams":["motion","magnetometer"],"interval":0.01,"frame":"xMagneticNorthZVertical"}"#, from: id)
        #expect(scripted.source.running(imu.number)?.deviceRate == 100)
        let period: Int64 = 10_000_000
        var next = scripted.now / period * period + period
        var fed: Set<Int64> = []
        for _ in 0..<300 {
            await scripted.loop.advanceTime(by: .milliseconds(10))
            var scans: [[SensorSample]] = []
            while next <= scripted.now - 8_000_000 {
                scans.append(imu.scan(accelerometer: Vector3(x: 8192, y: 0, z: 14189), at: next))
                fed.insert(next)
                next += period
            }
            try await scripted.feed(scans, to: imu.number)
        }
        let received = client.messages.compactMap { message -> (name: String, timestamp: Int64)? in
            switch message {
            case .motion(let m): ("MOTION", m.timestamp)
            case .magnetometer(let m): ("MAGNETOMETER", m.timestamp)
            default: nil
            }
        }
        let motions = received.filter { $0.name == "MOTION" }.map(\.timestamp)
        #expect(motions.count > 150, "100 Hz for 3 s")
        #expect(motions.allSatisfy { fed.contains($0) }, "each motion carries the time of an IMU scan")
        #expect(zip(motions, motions.dropFirst()).allSatisfy { $0 < $1 }, "no timestamp repeated or out of order")
        #expect(received.filter { $0.name == "MAGNETOMETER" }.count > 60, "polled at 25 Hz or more for 3 s")
        let outOfOrder = zip(received, received.dropFirst()).filter { $0.timestamp > $1.timestamp }
        #expect(outOfOrder.isEmpty, "fused in time order: \(outOfOrder.prefix(3))")

        let motion = try #require(client.motions.last)
        #expect((motion.gravity - Vector3(x: 0, y: -0.5, z: -0.866025)).length < 0.01, "\(motion.gravity)")
        let heading = try #require(motion.heading)
        #expect(abs(heading - 90) < 2, "heading \(heading)°")
        #expect(motion.unavailable == nil)
        try await scripted.shutDown()
    }

    /// (e) A Bosch accelerometer with the hwdb's most common kind of entry, a mirror
    /// (`1, 0, 0; 0, -1, 0; 0, 0, 1`, determinant −1): the chip faces the back, so lying face up it
    /// reads z = −1 g (−1000 counts). The hwdb's x and y rows are kept and the z row becomes
    /// x × y = (0, 0, −1): motiond reports face up, gravity (0, 0, −1) g. (iio-sensor-proxy 3.6+,
    /// which applies the matrix as written, calls this pose face-down: docs/frames.md.)
    @Test func boschAccelerometerWithAMirrorMatrixIsFaceUpWhenFaceUp() async throws {
        let bosch = Machines.boschMirror
        let (scripted, client, devices) = try await Self.watch(
            [bosch], counts: [bosch.number: [.accelerometer: Vector3(x: 0, y: 0, z: -1000)]], streams: ["motion", "tilt"])
        let device = try #require(devices.devices.first)
        #expect(device.mountMatrixSource == "udev:ACCEL_MOUNT_MATRIX")
        #expect(device.mountMatrix == [1, 0, 0, 0, -1, 0, 0, 0, 1])
        #expect(device.frameMatrix == [-1, 0, 0, 0, 1, 0, 0, 0, -1])
        #expect(device.mountMatrixCorrection?.contains("determinant is -1") == true)
        let motion = try #require(client.motions.last)
        #expect((motion.gravity - Vector3(x: 0, y: 0, z: -1)).length < 0.005, "\(motion.gravity)")
        #expect(client.tilts.last?.tilt == .faceUp)
        try await scripted.shutDown()
    }

    /// Motion watched, then nobody watches (the sensors close), the phone is turned a quarter about
    /// its long axis, and motion is watched again: the first motions must describe the new pose. The
    /// fusion used to resume from the attitude it had when the sensors closed, so against the new
    /// accelerometer reading it reported about 1 g of user acceleration for a second.
    @Test func motionAfterTheSensorsIdledDescribesThePoseNowNotTheOldOne() async throws {
        let scripted = try await ScriptedHub(devices: Machines.phone)
        scripted.source.counts.withLock { $0 = Machines.phoneCounts }
        let (client, id) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["motion"],"interval":0.05}"#, from: id)
        #expect(await scripted.advance { client.motions.count >= 10 } != nil)
        try await scripted.send(line: #"{"class":"WATCH","enable":false}"#, from: id)
        try await scripted.send(line: #"{"class":"STATUS"}"#, from: id)
        #expect(client.statuses.last?.sensors.isEmpty == true, "the sensors closed")
        // The chip's z (up when face up) now lies along its x: the phone stands on its side.
        scripted.source.counts.withLock { $0[DeviceNumber(0)] = [.accelerometer: Vector3(x: 256, y: -20, z: 10)] }
        await scripted.run(for: .seconds(1))
        let before = client.motions.count
        try await scripted.send(line: #"{"class":"WATCH","streams":["motion"],"interval":0.05}"#, from: id)
        #expect(await scripted.advance { client.motions.count > before } != nil)
        let first = try #require(client.motions.dropFirst(before).first)
        #expect(first.userAcceleration.length < 0.1, "user acceleration \(first.userAcceleration) g at rest")
        try await scripted.shutDown()
    }

    /// An accelerometer that only event streams read (orientation) is opened at the event rate, 4 Hz
    /// (docs/protocol.md: a turn reported within 300 ms), and may rest while still; one that motion
    /// also reads keeps its rate and never rests. (How it rests, by the phone's bma250e's adaptive
    /// polling, stays tested on its fixture: MachineClasses.)
    @Test func anAccelerometerOnlyEventStreamsReadRunsAtTheEventRateAndMayRest() async throws {
        let scripted = try await ScriptedHub(devices: Machines.phone)
        scripted.source.counts.withLock { $0 = Machines.phoneCounts }
        let (client, id) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["orientation"]}"#, from: id)
        let resting = try #require(scripted.source.running(DeviceNumber(0)))
        #expect(resting.rate == 4 && resting.deviceRate == 4 && resting.restsWhenStill, "\(resting)")
        #expect(await scripted.advance { !client.orientations.isEmpty } != nil)
        try await scripted.send(line: #"{"class":"WATCH","streams":["motion"],"interval":0.05}"#, from: id)
        let sampled = try #require(scripted.source.running(DeviceNumber(0)))
        #expect(sampled.rate == 20 && !sampled.restsWhenStill, "\(sampled)")
        try await scripted.shutDown()
    }
}
