import HubTestKit
import Logging
import MotionCore
import MotionDevices
import MotionFusion
import MotionWire
import NIOCore
import NIOEmbedded
import Testing

@testable import MotionHub

/// The gait and event detectors run only while a stream they make is wanted (watched, or polled
/// lately), and the step detector also while the step history is kept across restarts: an
/// accelerometer read for another stream feeds none of them.
@Suite struct DetectorDemandTests {
    static let display = DeviceDescriptor(
        number: DeviceNumber(0), name: "accel_3d", syspath: "/sys/bus/iio/devices/iio:device0",
        sensors: [SensorDescriptor(kind: .accelerometer, channels: [])])

    /// The whole hub on a scripted accelerometer lying face up: watched for its raw stream alone, it
    /// feeds neither the activity classifier (no activity after 3 s, where one is reported from the
    /// first sample, docs/activity.md) nor the orientation detector (no latest orientation); once
    /// `activity` and `orientation` are watched, each sends its value, the activity `stationary` once
    /// it has held 2 s.
    @Test func anAccelerometerWatchedForItsRawStreamFeedsNoDetectorUntilTheirStreamsAreWatched() async throws {
        let scripted = try await ScriptedHub(devices: [Self.display])
        let (client, id) = try await scripted.connect()
        try await scripted.send(.watch(.init(streams: [.accelerometer])), from: id)
        #expect(await scripted.advance(upTo: .seconds(1)) { !client.messages(of: .accelerometer).isEmpty } != nil)
        await scripted.run(for: .seconds(3))
        let unwatched = try await scripted.onLoop { hub in (hub.metrics().activity, hub.pipeline.latest(.orientation)) }
        #expect(unwatched.0 == nil && unwatched.1 == nil, "no activity nor orientation while unwatched: \(unwatched)")
        #expect(client.messages(of: .accelerometer).count >= 30, "the accelerometer ran throughout")

        try await scripted.send(.watch(.init(streams: [.accelerometer, .activity, .orientation])), from: id)
        func activities() -> [MotionActivityKind] { client.messages(of: .activity).compactMap { if case .activity(let m) = $0 { m.activity } else { nil } } }
        let waited = await scripted.advance(upTo: .seconds(4)) { activities().contains(.stationary) && !client.messages(of: .orientation).isEmpty }
        #expect(waited != nil, "an activity and an orientation once watched: \(activities())")
        #expect(try await scripted.onLoop { hub in hub.metrics().activity } == .stationary)
        try await scripted.shutDown()
    }

    /// A pipeline whose accelerometer runs for its raw stream alone, fed a 20 s walk
    /// (`GaitStageTests.walk`): the steps go into the history when it is kept across restarts (the
    /// daemon's state directory), as the library's step detector counts them, and not otherwise.
    @Test(arguments: [true, false])
    func aKeptHistoryCountsTheStepsOfAnAccelerometerNobodyWatchesForThem(keepsHistory: Bool) throws {
        let loop = EmbeddedEventLoop()
        let calibration = SavedState<SensorFusion.Calibration>(
            "calibration", store: nil, offLoop: OffLoopWork(eventLoop: loop, runner: .inline), logger: Logger(label: "test"))
        let pipeline = MotionPipeline(
            fanout: StreamFanout(clients: ClientTable(maximumClients: 1, eventLoop: loop, logger: Logger(label: "test"))), calibration: calibration,
            history: GaitHistory(now: GaitStageTests.unixOffset), keepsHistory: keepsHistory)
        let plan = CapturePlan(demands: [.init(stream: .accelerometer, interval: 0.02)], devices: [Self.display])
        pipeline.follow(plan, wanted: [.accelerometer], deviceRate: { _ in 50 })
        for (t, force) in GaitStageTests.walk {
            pipeline.add(SensorSample(kind: .accelerometer, device: Self.display.number, timestamp: t, vector: force), period: 20_000_000, from: Self.display.number)
        }
        var detector = StepDetector()
        for (t, force) in GaitStageTests.walk { detector.update(specificForce: force, timestamp: t) { _ in } }
        #expect(detector.steps >= 25, "\(detector.steps) steps: the walk is one")
        #expect(pipeline.gait.history.totalSteps == (keepsHistory ? detector.steps : 0))
    }
}
