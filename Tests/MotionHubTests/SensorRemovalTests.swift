import MotionCore
import MotionDevices
import MotionWire
import NIOCore
import HubTestKit
import Testing

@testable import MotionHub

/// `ENDED` ends the streams that a removed sensor fed, and only those (docs/protocol.md, `ENDED`: "its
/// sensor went away"): a convertible's screen orientation and tilt come from the display's
/// accelerometer, its hinge from both (iio-sensor-proxy and the hwdb's `ACCEL_LOCATION`: the base's
/// says nothing of the screen). The whole hub on a scripted machine.
@Suite struct SensorRemovalTests {
    static func accelerometer(_ number: Int32, _ location: SensorLocation) -> DeviceDescriptor {
        DeviceDescriptor(
            number: DeviceNumber(number), name: "accel_\(location)", syspath: "/sys/bus/iio/devices/iio:device\(number)", location: location,
            sensors: [SensorDescriptor(kind: .accelerometer, channels: [])])
    }

    static let display = accelerometer(0, .display)
    static let base = accelerometer(1, .base)

    /// How the base goes: udev's listing no longer has it, or its capture ends first (its device
    /// vanished), as either may come first.
    enum Removal: CaseIterable { case listing, captureEnded }

    /// The screen's watcher gets no `ENDED` when the base goes, and still sees a turn (onto its right
    /// edge: `left-up`) after it; the hinge's watcher gets `ENDED` `hinge`. Before, the screen's got
    /// `ENDED` for `orientation` and `tilt`.
    @Test(arguments: Removal.allCases)
    func removingTheBaseEndsOnlyTheHinge(_ removal: Removal) async throws {
        let scripted = try await ScriptedHub(devices: [Self.display, Self.base])
        scripted.source.pose.withLock {
            $0[Self.display.number] = Vector3(x: 0, y: Units.standardGravity, z: 0)
            $0[Self.base.number] = Vector3(x: 0, y: 0, z: Units.standardGravity)
        }
        let (screen, screenID) = try await scripted.connect()
        try await scripted.send(.watch(.init(streams: [.orientation, .tilt])), from: screenID)
        let (hinge, hingeID) = try await scripted.connect()
        try await scripted.send(.watch(.init(streams: [.hinge])), from: hingeID)
        #expect(await scripted.advance { !screen.messages(of: .orientation).isEmpty && !hinge.messages(of: .hinge).isEmpty } != nil)
        switch removal {
        case .listing: try await scripted.list([Self.display])
        case .captureEnded:
            let source = scripted.source
            try await scripted.loop.executeInContext { source.vanish(Self.base.number) }
            await scripted.settle()
        }
        #expect(hinge.ended == [.hinge])
        #expect(screen.ended == [], "the display's accelerometer still runs")
        scripted.source.pose.withLock { $0[Self.display.number] = Vector3(x: -Units.standardGravity, y: 0, z: 0) }
        let turned = await scripted.advance {
            screen.messages(of: .orientation).contains { if case .orientation(let m) = $0 { m.orientation == .leftUp } else { false } }
        }
        #expect(turned != nil, "the turn after the base went")
        try await scripted.shutDown()
    }

    /// Removing the display's accelerometer ends all three: each needs it.
    @Test func removingTheDisplayEndsTheScreensStreamsAndTheHinge() async throws {
        let scripted = try await ScriptedHub(devices: [Self.display, Self.base])
        let (client, id) = try await scripted.connect()
        try await scripted.send(.watch(.init(streams: [.orientation, .tilt, .hinge])), from: id)
        #expect(await scripted.advance { !client.messages(of: .hinge).isEmpty } != nil)
        try await scripted.list([Self.base])
        #expect(Set(client.ended) == [.orientation, .tilt, .hinge] && client.ended.count == 3)
        try await scripted.shutDown()
    }
}
