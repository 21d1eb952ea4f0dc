import HubTestKit
import MotionCore
import MotionDevices
import MotionWire
import NIOCore
import Testing

@testable import MotionHub

/// `ENDED` (docs/protocol.md): a stream whose sensor went away ends, with the reason; a device plugged
/// back in is served without a restart; a stream that can go on without the sensor goes on, saying
/// what it lacks now. The hub on scripted machines.
@Suite struct EndedTests {
    static let imu = Machines.imu

    /// Unplugged: the gyroscope's watcher gets `ENDED` naming the device. Plugged back in, the kernel
    /// gives it a new number; DEVICES lists it, and a new watch is served from it (from
    /// Hardware.Server.unplugEndsTheStreamAndAReplugIsServedWithoutARestart).
    @Test func unplugEndsTheStreamAndAReplugIsServedWithoutARestart() async throws {
        let (scripted, client, id) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","streams":["gyroscope"],"interval":0.01}"#, on: [Self.imu])
        try await scripted.feed([Self.imu.scan(accelerometer: .zero, gyroscope: Vector3(x: 10, y: 20, z: 30), at: 1_000_000)], to: Self.imu.number)
        #expect(client.gyroscopes.count == 1)

        try await scripted.list([])
        let ended = try #require(client.values { if case .ended(let e) = $0 { e } else { nil } }.first)
        #expect(ended.stream == .gyroscope && ended.reason.contains("iio:device0"), "\(ended)")

        var replugged = Self.imu
        replugged.number = DeviceNumber(1)
        replugged.syspath = replugged.syspath.replacingOccurrences(of: "iio:device0", with: "iio:device1")
        try await scripted.list([replugged])
        try await scripted.send(line: #"{"class":"DEVICES"}"#, from: id)
        #expect(client.deviceReplies.last?.devices.map(\.device) == ["iio:device1"])
        try await scripted.send(line: #"{"class":"WATCH","streams":["gyroscope"],"interval":0.01}"#, from: id)
        try await scripted.feed([replugged.scan(accelerometer: .zero, gyroscope: Vector3(x: 10, y: 20, z: 30), at: 2_000_000)], to: replugged.number)
        #expect(client.gyroscopes.last?.timestamp == 2_000_000)
        try await scripted.shutDown()
    }

    /// A capture that ends for another reason than a device gone (its reads kept failing) ends its
    /// streams with that reason, and the device stays listed.
    @Test func aCaptureThatFailsEndsItsStreamsWithTheReasonAndTheDeviceStays() async throws {
        let (scripted, client, id) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","streams":["gyroscope"],"interval":0.01}"#, on: [Self.imu])
        let error = DeviceError.attributeUnreadable(device: "iio:device0", attribute: "in_anglvel_x_raw", errno: 5)
        try await scripted.onLoop { _ in scripted.source.fail(Self.imu.number, with: error) }
        let ended = try #require(client.values { if case .ended(let e) = $0 { e } else { nil } }.first)
        #expect(ended.stream == .gyroscope && ended.reason == "\(error)", "\(ended)")
        try await scripted.send(line: #"{"class":"DEVICES"}"#, from: id)
        #expect(client.deviceReplies.last?.devices.map(\.device) == ["iio:device0"])
        try await scripted.shutDown()
    }

    /// A listing that fails (libudev or libiio could not list) keeps the devices known: no stream
    /// ends, and the next samples are served.
    @Test func aFailedListingKeepsTheDevicesAndTheirStreams() async throws {
        struct ListingFailed: Error {}
        let (scripted, client, _) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","streams":["gyroscope"],"interval":0.01}"#, on: [Self.imu])
        try await scripted.onLoop { hub in hub.apply(.failure(ListingFailed())) }
        try await scripted.feed([Self.imu.scan(accelerometer: .zero, gyroscope: Vector3(x: 1, y: 0, z: 0), at: 1_000_000)], to: Self.imu.number)
        #expect(client.ended.isEmpty)
        #expect(client.gyroscopes.count == 1)
        try await scripted.shutDown()
    }

    /// A phone whose gyroscope goes away (unplugged, or its driver unbound) while motion is watched:
    /// motion goes on from the accelerometer and the magnetometer, and says the rotation rate is now
    /// unavailable, instead of falling silent (from Hardware.MachineClasses, the phone fixture).
    @Test func motionGoesOnWithoutTheGyroscopeWhenItIsUnplugged() async throws {
        let phone = Machines.phone
        let scripted = try await ScriptedHub(devices: phone)
        let (client, id) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["motion"],"interval":0.1}"#, from: id)
        #expect(await scripted.advance { !client.motions.isEmpty } != nil)
        #expect(client.motions.last?.unavailable == nil, "all three sensors: nothing unavailable")
        try await scripted.list(phone.filter { $0.number != DeviceNumber(1) })
        #expect(client.ended.isEmpty, "motion needs no gyroscope")
        let before = client.motions.count
        #expect(await scripted.advance { client.motions.count > before + 1 } != nil)
        #expect(client.motions.last?.unavailable == [.rotationRate])
        try await scripted.shutDown()
    }

    /// A listing that leaves out a device libiio cannot read (a `name` beyond its 1,024-byte buffer:
    /// EFBIG; or one unplugged while it reads: ENOENT, which the soak hit) keeps the devices known
    /// serving: no `ENDED`, DEVICES lists the good one, and the odd device is said once while it
    /// lasts, though every listing has it (from Hardware.Server.aDeviceLibiioCannotReadLeavesTheDevicesKnownServing;
    /// the device layer's skipping it is Hardware.BadInput.aDeviceLibiioCannotReadIsSkippedAndTheOthersStay).
    @Test func aDeviceLibiioCannotReadLeavesTheDevicesKnownServing() async throws {
        let log = RecordedLog()
        let scripted = try await ScriptedHub(devices: [Self.imu], log: log)
        let (client, id) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["gyroscope"],"interval":0.01}"#, from: id)
        let scan = { (t: Int64) in Self.imu.scan(accelerometer: .zero, gyroscope: Vector3(x: 10, y: 20, z: 30), at: t) }
        try await scripted.feed([scan(1_000_000)], to: Self.imu.number)
        let odd = { (n: Int) in DeviceError.attributeUnreadable(device: "iio:device\(n)", attribute: "name", errno: 27) }
        try await scripted.list([Self.imu], problems: [odd(2)])
        #expect(log.count("device skipped", about: "iio:device2") == 1)
        try await scripted.send(line: #"{"class":"DEVICES"}"#, from: id)
        #expect(client.deviceReplies.last?.devices.map(\.device) == ["iio:device0"])
        try await scripted.feed([scan(11_000_000)], to: Self.imu.number)  // one 0.01 s interval later
        #expect(client.gyroscopes.map(\.timestamp) == [1_000_000, 11_000_000], "the stream went on")
        #expect(client.ended.isEmpty)
        // Listed again (another odd device comes): what was said of the first is not said again.
        try await scripted.list([Self.imu], problems: [odd(2), odd(3)])
        #expect(log.count("device skipped", about: "iio:device3") == 1)
        #expect(log.count("device skipped", about: "iio:device2") == 1)
        try await scripted.shutDown()
    }
}
