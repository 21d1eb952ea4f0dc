import MotionCore
import MotionDevices
import MotionWire
import NIOCore
import HubTestKit
import Testing
import TestSupport

@testable import MotionHub

/// A device's timestamps are untrusted input (an IIO buffer's timestamp channel, a network board, a
/// recording): any Int64 at all. The whole hub, on a scripted IMU and barometer whose clocks say
/// Int64.min, Int64.max, 0, ±2^62 by turns and go backwards, must neither trap nor hand a client a
/// value that is not finite, and every stream goes on once the clocks are sane again.
@Suite struct HostileTimestampTests {
    static let imu = DeviceDescriptor(
        number: DeviceNumber(0), name: "imu", syspath: "/sys/bus/iio/devices/iio:device0",
        sensors: [
            SensorDescriptor(kind: .accelerometer, channels: []), SensorDescriptor(kind: .gyroscope, channels: []),
            SensorDescriptor(kind: .magnetometer, channels: []),
        ])
    static let barometer = DeviceDescriptor(
        number: DeviceNumber(1), name: "baro", syspath: "/sys/bus/iio/devices/iio:device1",
        sensors: [SensorDescriptor(kind: .pressure, channels: [])])

    /// Every stream an IMU and a barometer make.
    static let streams: [StreamKind] = [
        .motion, .accelerometer, .gyroscope, .magnetometer, .pedometer, .activity, .gesture, .orientation, .tilt, .altitude,
    ]

    @Test func hostileTimestampsNeitherTrapNorReachAClientAsNonFiniteValues() async throws {
        let scripted = try await ScriptedHub(devices: [Self.imu, Self.barometer])
        scripted.source.pose.withLock { $0[Self.imu.number] = Vector3(x: 0, y: 0, z: Units.standardGravity) }
        scripted.source.readings.withLock {
            $0[.gyroscope] = Vector3(x: 0.01, y: -0.02, z: 0.03)
            $0[.magnetometer] = Vector3(x: 20, y: 0, z: -40)
            $0[.pressure] = Vector3(x: 101.325, y: 0, z: 0)
        }
        let (client, id) = try await scripted.connect()
        try await scripted.send(.watch(.init(streams: Self.streams, interval: 0.01)), from: id)
        // Sane first, so that every stage has state for the hostile stamps to meet.
        _ = await scripted.advance(upTo: .seconds(1)) { false }
        scripted.source.stamps.withLock {
            $0[Self.imu.number] = hostileTimestamps
            $0[Self.barometer.number] = hostileTimestamps
        }
        #expect(await scripted.advance(upTo: .seconds(10)) { scripted.source.stamps.withLock { $0.values.allSatisfy(\.isEmpty) } } != nil)
        let resumed = client.received.count
        // Sane again (the loop's clock), and the device turned upright: the orientation follows.
        _ = await scripted.advance(upTo: .seconds(3)) { false }
        scripted.source.pose.withLock { $0[Self.imu.number] = Vector3(x: 0, y: Units.standardGravity, z: 0) }
        let after = { client.received.dropFirst(resumed).map(\.message) }
        let periodic: [StreamKind] = [.motion, .accelerometer, .gyroscope, .magnetometer, .altitude]
        let waited = await scripted.advance(upTo: .seconds(5)) {
            let got = after()
            return periodic.allSatisfy { stream in got.contains { $0.stream == stream } }
                && got.contains { if case .orientation(let o) = $0 { o.orientation == .normal } else { false } }
        }
        let got = after()
        for stream in periodic { #expect(got.contains { $0.stream == stream }, "\(stream) after sane timestamps resumed") }
        // The activity classifier started over at the jump back to sane stamps, and 2 s still is stationary again.
        #expect(got.contains { if case .activity(let a) = $0 { a.activity == .stationary } else { false } }, "activity after sane stamps")
        #expect(waited != nil, "every stream again, and the turn upright: \(Set(got.compactMap(\.stream)))")
        let nonFinite = client.received.map(\.message).filter { !storedDoubles(in: $0).allSatisfy(\.isFinite) }
        #expect(nonFinite.isEmpty, "\(nonFinite.prefix(3))")
        let counts = Dictionary(grouping: client.received.compactMap(\.message.stream), by: { $0 }).mapValues(\.count)
        print("hostile timestamps: \(client.received.count) messages, none with a non-finite value; by stream \(counts)")
        try await scripted.shutDown()
    }
}
