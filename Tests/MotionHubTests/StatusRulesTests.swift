import HubTestKit
import MotionCore
import MotionDevices
import MotionWire
import NIOCore
import Testing

@testable import MotionHub

/// DEVICES and STATUS (docs/protocol.md): what the machine has, what runs and how fast, and what it
/// cannot give and why, before anything is watched. The hub on scripted machines.
@Suite struct StatusRulesTests {
    /// DEVICES names each device, its kinds and how it is read (from Hardware.Server.greetingDevicesErrorsWatchPollAndStatus).
    @Test func theDevicesReplyNamesEachDeviceItsKindsAndItsMode() async throws {
        let (scripted, client, _) = try await ScriptedHub.withClient(sending: #"{"class":"DEVICES","id":1}"#, on: [Machines.imu])
        let devices = try #require(client.deviceReplies.last)
        #expect(devices.id == .integer(1))
        #expect(devices.devices.map(\.device) == ["iio:device0"])
        #expect(devices.devices.first?.kinds == [.accelerometer, .gyroscope])
        #expect(devices.devices.first?.mode == "buffered")
        try await scripted.shutDown()
    }

    /// STATUS counts the clients and lists each running sensor, how it is read and the rate measured
    /// on its samples' timestamps: 100 scans at 100 Hz (from Hardware.Server.greetingDevicesErrorsWatchPollAndStatus).
    @Test func statusListsTheRunningSensorWithItsModeAndTheRateMeasuredOnItsTimestamps() async throws {
        let (scripted, client, id) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","streams":["motion","accelerometer"],"interval":0.02}"#, on: [Machines.imu])
        let scans = (0..<100).map { Machines.imu.scan(accelerometer: Vector3(x: 0, y: 0, z: 16384), at: 1_000_000_000 + Int64($0) * 10_000_000) }
        try await scripted.feed(scans, to: Machines.imu.number)
        try await scripted.send(line: #"{"class":"STATUS","id":5}"#, from: id)
        let status = try #require(client.statuses.last)
        #expect(status.id == .integer(5) && status.clients == 1)
        #expect(status.sensors.map(\.device) == ["iio:device0"])
        #expect(status.sensors.first?.mode == "buffered")
        #expect(abs((status.sensors.first?.measuredRate ?? 0) - 100) < 1, "the rate measured on the timestamps")
        try await scripted.shutDown()
    }

    /// STATUS says what the machine cannot give before anything is watched: the laptop with one
    /// accelerometer and nothing else lacks every other sensor's stream (light, altitude and presence
    /// too), the hinge, and the yaw, rotation rate, magnetic field and heading of motion (the reasons as
    /// in protocol.md; from Hardware.MachineClasses, laptop-hid-accelerometer).
    @Test func statusSaysWhatALaptopWithOnlyAnAccelerometerCannotGiveAndWhy() async throws {
        let (scripted, client, _) = try await ScriptedHub.withClient(sending: #"{"class":"STATUS"}"#, on: [Machines.laptop])
        let unavailable = try #require(client.statuses.last?.unavailable)
        #expect(unavailable.streams.keys.sorted() == ["altitude", "gyroscope", "hinge", "light", "magnetometer", "presence", "proximity"])
        #expect(unavailable.streams["presence"] == "presence needs a sensor this machine does not have: human-presence or proximity")
        #expect(unavailable.streams["altitude"] == "altitude needs a sensor this machine does not have: pressure")
        #expect(unavailable.streams["gyroscope"] == "gyroscope needs a sensor this machine does not have: gyroscope")
        #expect(unavailable.streams["hinge"] == "hinge needs two accelerometers, one in the display and one in the base")
        #expect(unavailable.motion == [.yaw, .rotationRate, .magneticField, .heading])
        try await scripted.shutDown()
    }

    /// The hinge of a machine with one accelerometer is refused with its reason (from Hardware.MachineClasses).
    @Test func theHingeOfAMachineWithOneAccelerometerIsRefusedWithItsReason() async throws {
        let (scripted, client, _) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","streams":["hinge"]}"#, on: [Machines.laptop])
        #expect(client.errors.last?.message == "hinge needs two accelerometers, one in the display and one in the base")
        try await scripted.shutDown()
    }

    /// A gyroscope alone gives its rotation rate, and motion is refused with the reason: 100 counts ×
    /// 0.000152716 rad/s on x, negated into the device frame (from Hardware.MachineClasses, gyroscope-only).
    @Test func motionOnAMachineWithoutAnAccelerometerIsRefusedWithItsReason() async throws {
        let gyroscope = Machines.gyroscopeOnly
        let scripted = try await ScriptedHub(devices: [gyroscope])
        scripted.source.counts.withLock { $0[gyroscope.number] = [.gyroscope: Vector3(x: 100, y: 0, z: 0)] }
        let (client, id) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["motion"]}"#, from: id)
        let error = try #require(client.errors.last)
        #expect(error.code == .unavailable)
        #expect(error.message == "motion needs a sensor this machine does not have: accelerometer")
        try await scripted.send(line: #"{"class":"POLL","streams":["gyroscope"]}"#, from: id)
        #expect(await scripted.advance { !client.snapshots.isEmpty } != nil)
        #expect(abs((client.snapshots.last?.gyroscope?.rotationRate.x ?? 0) + 0.0152716) < 1e-6)
        try await scripted.shutDown()
    }

    /// Clients beyond the hub's limit are refused: `connect` gives no id, and one that leaves makes room.
    @Test func aClientBeyondTheLimitIsRefusedUntilOneLeaves() async throws {
        let scripted = try await ScriptedHub(devices: [Machines.imu], maximumClients: 2)
        let (_, first) = try await scripted.connect()
        _ = try await scripted.connect()
        await #expect(throws: ScriptedHubError.self) { try await scripted.connect() }
        try await scripted.disconnect(first)
        let (client, id) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"STATUS"}"#, from: id)
        #expect(client.statuses.last?.clients == 2)
        try await scripted.shutDown()
    }
}
