import MotionCore
import MotionDevices
import MotionWire
import NIOCore
import HubTestKit
import Testing

@testable import MotionHub

/// A new watcher of an event stream gets the current state first (docs/protocol.md's stream table:
/// "the current state when watching starts, then each change"), also when the sensor had closed
/// because the last watcher left and the device has lain still since: the hub, on a scripted device
/// read 4 times a second (`CapturePlan.eventRate`).
@Suite struct FirstStateTests {
    static let display = DeviceDescriptor(
        number: DeviceNumber(0), name: "accel_3d", syspath: "/sys/bus/iio/devices/iio:device0",
        sensors: [SensorDescriptor(kind: .accelerometer, channels: [])])

    /// How the last watcher goes: it disconnects (a `motionctl watch` ending), or it unwatches and
    /// watches again as one client (the D-Bus bridge's release and next claim).
    enum Leaving: CaseIterable { case disconnecting, unwatching }

    /// Upright, top edge up: `normal` (iio-sensor-proxy's name, design.md: y ≈ −1 g in CoreMotion's
    /// sign) and `vertical` (TILT: |θ| ≤ 20°). The second watcher gets both with the first sample of
    /// the reopened sensor, one read period (0.25 s) after it asked; before, it got nothing at all.
    @Test(arguments: Leaving.allCases)
    func aWatcherAfterTheLastOneLeftGetsTheStateOfADeviceLyingStill(_ leaving: Leaving) async throws {
        let scripted = try await ScriptedHub(devices: [Self.display])
        scripted.source.pose.withLock { $0[Self.display.number] = Vector3(x: 0, y: Units.standardGravity, z: 0) }
        func watch(_ streams: [StreamKind]?, enable: Bool = true, from id: Hub.ClientID) async throws {
            try await scripted.send(.watch(.init(id: .integer(1), streams: streams, enable: enable)), from: id)
        }
        func hasState(_ client: ScriptedHub.Client, after count: Int = 0) -> Bool {
            client.received.dropFirst(count).contains { $0.message.stream == .orientation }
                && client.received.dropFirst(count).contains { $0.message.stream == .tilt }
        }
        let (first, firstID) = try await scripted.connect()
        try await watch([.orientation, .tilt], from: firstID)
        #expect(await scripted.advance { hasState(first) } != nil, "the first watcher's state")
        // The last watcher leaves: the accelerometer closes.
        let (second, secondID): (ScriptedHub.Client, Hub.ClientID)
        switch leaving {
        case .disconnecting:
            try await scripted.disconnect(firstID)
            (second, secondID) = try await scripted.connect()
        case .unwatching:
            try await watch(nil, enable: false, from: firstID)
            (second, secondID) = (first, firstID)
        }
        await scripted.loop.advanceTime(by: .seconds(5))
        let before = second.received.count
        try await watch([.orientation, .tilt], from: secondID)
        let waited = await scripted.advance { hasState(second, after: before) }
        #expect(scripted.source.openingCount(of: Self.display.number) == 2, "closed when the first left, opened again")
        let got = second.received.dropFirst(before).map(\.message)
        #expect(got.contains(.orientation(.init(timestamp: Int64(scripted.loop.now.uptimeNanoseconds), orientation: .normal))), "\(got)")
        #expect(got.contains(.tilt(.init(timestamp: Int64(scripted.loop.now.uptimeNanoseconds), tilt: .vertical))), "\(got)")
        let figure = waited.map { "\(Double($0.nanoseconds) / 1e9) s" } ?? "nothing in 3 s"
        #expect(waited.map { $0 <= .milliseconds(300) } == true, "the state within 0.3 s: \(figure)")
        print("\(leaving): the new watcher got the state after \(figure)")
        try await scripted.shutDown()
    }

    /// A light sensor keeps running for another client (a desktop's automatic brightness) while the
    /// accelerometer is closed and the device is turned onto its right edge (left edge up:
    /// `left-up`, x ≈ +1 g in iio-sensor-proxy's reading, design.md). The new watcher's first state is
    /// the new pose, not the one from before the close.
    @Test func aWatcherGetsThePoseOfNowNotTheOneBeforeTheSensorClosed() async throws {
        let light = DeviceDescriptor(
            number: DeviceNumber(1), name: "als", syspath: "/sys/bus/iio/devices/iio:device1", sensors: [SensorDescriptor(kind: .light, channels: [])])
        let scripted = try await ScriptedHub(devices: [Self.display, light])
        scripted.source.pose.withLock { $0[Self.display.number] = Vector3(x: 0, y: Units.standardGravity, z: 0) }
        let (brightness, brightnessID) = try await scripted.connect()
        try await scripted.send(.watch(.init(streams: [.light])), from: brightnessID)
        let (screen, screenID) = try await scripted.connect()
        try await scripted.send(.watch(.init(streams: [.orientation])), from: screenID)
        #expect(await scripted.advance { !screen.messages(of: .orientation).isEmpty } != nil)
        try await scripted.disconnect(screenID)
        scripted.source.pose.withLock { $0[Self.display.number] = Vector3(x: -Units.standardGravity, y: 0, z: 0) }
        await scripted.loop.advanceTime(by: .seconds(5))
        let (next, nextID) = try await scripted.connect()
        try await scripted.send(.watch(.init(streams: [.orientation])), from: nextID)
        #expect(await scripted.advance { !next.messages(of: .orientation).isEmpty } != nil)
        await scripted.loop.advanceTime(by: .seconds(1))
        let states = next.messages(of: .orientation).map { message -> ScreenOrientation? in if case .orientation(let m) = message { m.orientation } else { nil } }
        #expect(states == [.leftUp], "only the pose of now")
        #expect(!brightness.messages(of: .light).isEmpty, "the light ran throughout")
        try await scripted.shutDown()
    }
}
