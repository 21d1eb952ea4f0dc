import HubTestKit
import MotionCore
import MotionDevices
import MotionWire
import NIOCore
import Testing

@testable import MotionHub

/// The screen's two streams, orientation and tilt, come from one accelerometer that rests while only
/// they are wanted (`CapturePlan.Capture.restsWhenStill`): an HID sensor hub then sends no sample
/// until the device moves, and asking for the other stream changes no plan, so no capture reopens.
/// While either is wanted both detectors are fed, so the other has its value at once: a POLL is
/// answered and a new watcher gets its state, as when both were fed with every sample.
@Suite struct ScreenDetectorsAtRestTests {
    /// laptop-hid-accelerometer's `accel_3d`, whose samples come only when the test feeds them (the
    /// kit's buffered device): a hub at rest sends nothing.
    static let hid: DeviceDescriptor = {
        var device = Machines.laptop
        device.captureMode = .buffered
        return device
    }()

    /// Upright, top edge up (specific force +1 g along y): `normal` and `vertical` (design.md).
    static func upright(at t: Int64) -> [SensorSample] {
        [SensorSample(kind: .accelerometer, device: hid.number, timestamp: t, vector: Vector3(x: 0, y: Units.standardGravity, z: 0))]
    }

    /// Orientation watched, 5 samples, then none: a POLL of `tilt` 1 s later is answered at once with
    /// `vertical`, and a new watcher of `tilt` gets `vertical` first, with no further sample.
    @Test func theOtherScreenStreamHasItsValueWhileTheAccelerometerRests() async throws {
        let scripted = try await ScriptedHub(devices: [Self.hid])
        let (screen, screenID) = try await scripted.connect()
        try await scripted.send(.watch(.init(streams: [.orientation])), from: screenID)
        #expect(scripted.source.running(Self.hid.number)?.restsWhenStill == true, "the accelerometer rests while only the screen is wanted")
        let start = scripted.now
        try await scripted.feed((0..<5).map { Self.upright(at: start + Int64($0) * 100_000_000) }, to: Self.hid.number)
        #expect(screen.messages(of: .orientation) == [.orientation(.init(timestamp: start, orientation: .normal))])
        await scripted.run(for: .seconds(1))

        let (poller, pollerID) = try await scripted.connect()
        try await scripted.send(.poll(.init(id: .integer(2), streams: [.tilt])), from: pollerID)
        let answered = await scripted.advance { !poller.snapshots.isEmpty || !poller.errors.isEmpty }
        #expect(poller.errors.isEmpty, "\(poller.errors)")
        #expect(answered == .zero, "answered at once: \(String(describing: answered))")
        #expect(poller.snapshots.first?.tilt == TiltMessage(timestamp: start + 400_000_000, tilt: .vertical), "\(poller.snapshots)")

        let (watcher, watcherID) = try await scripted.connect()
        try await scripted.send(.watch(.init(streams: [.tilt])), from: watcherID)
        #expect(watcher.messages(of: .tilt) == [.tilt(.init(timestamp: start + 400_000_000, tilt: .vertical))], "the state first: \(watcher.messages)")
        #expect(scripted.source.openingCount(of: Self.hid.number) == 1, "no capture reopened")
        try await scripted.shutDown()
    }
}
