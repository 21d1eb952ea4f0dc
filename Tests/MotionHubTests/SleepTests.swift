import Foundation
import HubTestKit
import Logging
import MotionCore
import MotionDevices
import MotionWire
import NIOCore
import Synchronization
import Testing

@testable import MotionHub

/// The machine's sleep and a sensor's recovery, as the hub sees them (issue 62; sleep-and-recovery.md):
/// logind's `PrepareForSleep(true)` is `prepareForSleep()`, `PrepareForSleep(false)` is `resumed()`.
/// The whole hub on a scripted machine, its clock the test's.
@Suite struct SleepTests {
    static let laptop = Machines.laptop
    static let upright = Vector3(x: 0, y: Units.standardGravity, z: 0)
    /// Onto its right edge: `left-up` (iio-sensor-proxy's orientation for gravity along −x).
    static let onItsEdge = Vector3(x: -Units.standardGravity, y: 0, z: 0)

    static func orientations(_ client: ScriptedHub.Client) -> [ScreenOrientation] {
        client.values { if case .orientation(let m) = $0 { m.orientation } else { nil } }
    }

    /// A client's WATCH outlives the sleep: the capture closes before the machine sleeps and opens
    /// none while it sleeps; at the resume it opens again as at start (a new opening: every attribute
    /// written afresh), and the turn the machine took while asleep reaches the watcher within 1 s of
    /// the resume, without a new WATCH and without `ENDED`. STATUS counts the sleep and the re-arm.
    @Test func aWatchOutlivesTheSleepAndSeesTheTurnTakenWhileAsleep() async throws {
        let (scripted, client, id) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","streams":["orientation"]}"#, on: [Self.laptop])
        scripted.source.pose.withLock { $0[Self.laptop.number] = Self.upright }
        #expect(await scripted.advance { Self.orientations(client).last == .normal } != nil)
        #expect(scripted.source.openingCount(of: Self.laptop.number) == 1)

        let quiet = try await scripted.onLoop { hub in hub.prepareForSleep() }
        let closed = Mutex(false)
        quiet.whenSuccess { closed.withLock { $0 = true } }
        await scripted.settle()
        #expect(closed.withLock { $0 }, "the future succeeds once every capture is closed")
        #expect(scripted.source.running(Self.laptop.number) == nil)
        scripted.source.pose.withLock { $0[Self.laptop.number] = Self.onItsEdge }
        await scripted.run(for: .seconds(5))
        #expect(scripted.source.openingCount(of: Self.laptop.number) == 1, "nothing opens while the machine sleeps")

        try await scripted.onLoop { hub in hub.resumed() }
        let took = await scripted.advance(upTo: .seconds(1)) { Self.orientations(client).last == .leftUp }
        #expect(took != nil, "the turn taken while asleep reaches the watcher within 1 s of the resume")
        #expect(scripted.source.openingCount(of: Self.laptop.number) == 2)
        #expect(client.ended == [])
        try await scripted.send(line: #"{"class":"STATUS","id":1}"#, from: id)
        let status = try #require(client.statuses.last)
        #expect(status.sleeps == 1)
        #expect(status.recoveries == [StatusReply.Recovery(device: "iio:device0", reason: "resume", count: 1)])
        try await scripted.shutDown()
    }

    /// The fusion sees the sleep as a gap: a device turning at 0.5 rad/s before a 60 s sleep and after
    /// it turns the attitude by one sample's worth across it (0.005 rad), not by the 30 rad that
    /// integrating the rate over the sleep would give.
    @Test func theFusionIntegratesNoRotationAcrossTheSleep() async throws {
        let imu = Machines.imu
        let (scripted, client, _) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","streams":["motion"],"interval":0.01}"#, on: [imu])
        // 470 counts × 0.001065 rad/s: 0.5 rad/s about z; lying flat, 1 g on z (16,400 counts × 0.000598 m/s²).
        func turning(from start: Int64, count: Int) -> [[SensorSample]] {
            (0..<count).map { imu.scan(accelerometer: Vector3(x: 0, y: 0, z: 16_400), gyroscope: Vector3(x: 0, y: 0, z: 470), at: start + Int64($0) * 10_000_000) }
        }
        func yaws() -> [Double] { client.values { if case .motion(let m) = $0 { m.attitude.yaw } else { nil } } }
        try await scripted.feed(turning(from: 1_000_000_000, count: 100), to: imu.number)
        let before = try #require(yaws().last)
        _ = try await scripted.onLoop { hub in hub.prepareForSleep() }
        try await scripted.onLoop { hub in hub.resumed() }
        await scripted.settle()
        let count = yaws().count
        try await scripted.feed(turning(from: 62_000_000_000, count: 10), to: imu.number)
        let after = try #require(yaws().dropFirst(count).first)
        let turned = abs(remainder(after - before, 2 * .pi))
        #expect(turned < 0.05, "the attitude turned \(turned) rad across the sleep")
        try await scripted.shutDown()
    }

    /// A resume that never comes (a message lost, logind replaced mid-sleep) does not leave the sensors
    /// closed for good: a minute of the monotonic clock asleep, which stops while the machine sleeps,
    /// is a minute awake, and the captures open again.
    @Test func aResumeThatNeverComesIsGivenUpAfterAMinuteAwake() async throws {
        let log = RecordedLog()
        let scripted = try await ScriptedHub(devices: [Self.laptop], log: log)
        let (client, id) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["accelerometer"],"interval":0.1}"#, from: id)
        _ = try await scripted.onLoop { hub in hub.prepareForSleep() }
        await scripted.run(for: .seconds(59))
        #expect(scripted.source.running(Self.laptop.number) == nil)
        let before = client.messages(of: .accelerometer).count
        #expect(await scripted.advance(upTo: .seconds(2), until: { client.messages(of: .accelerometer).count > before }) != nil)
        #expect(log.count("no resume came a minute after") == 1)
        try await scripted.shutDown()
    }

    /// What the machine learnt is on disk before it sleeps (it may never wake: a battery runs out):
    /// the fusion's calibration is written by `prepareForSleep`, not left for a periodic save or the
    /// shutdown.
    @Test func theStateIsOnDiskBeforeTheMachineSleeps() async throws {
        let directory = NSTemporaryDirectory() + "motiond-sleep-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let scripted = try await ScriptedHub(devices: [Self.laptop], store: StateStore(directory: directory))
        let (_, id) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["motion"]}"#, from: id)
        await scripted.run(for: .seconds(1))
        #expect(!FileManager.default.fileExists(atPath: directory + "/calibration.json"))
        _ = try await scripted.onLoop { hub in hub.prepareForSleep() }
        #expect(FileManager.default.fileExists(atPath: directory + "/calibration.json"))
        try await scripted.onLoop { hub in hub.resumed() }
        try await scripted.shutDown()
    }

    /// A hundred sleeps in a row lose no watch and no client: each resume opens the capture once
    /// more, and samples reach the watcher after each.
    @Test func aHundredSleepsLoseNoWatch() async throws {
        let (scripted, client, id) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","streams":["accelerometer"],"interval":0.1}"#, on: [Self.laptop])
        for cycle in 1...100 {
            let before = client.messages(of: .accelerometer).count
            _ = try await scripted.onLoop { hub in hub.prepareForSleep() }
            try await scripted.onLoop { hub in hub.resumed() }
            guard await scripted.advance(upTo: .seconds(1), until: { client.messages(of: .accelerometer).count > before }) != nil else {
                Issue.record("no sample within 1 s of resume \(cycle)")
                break
            }
        }
        #expect(scripted.source.openingCount(of: Self.laptop.number) == 101)
        #expect(client.ended == [] && client.errors == [])
        try await scripted.send(line: #"{"class":"STATUS","id":1}"#, from: id)
        #expect(client.statuses.last?.sleeps == 100)
        #expect(client.statuses.last?.clients == 1)
        try await scripted.shutDown()
    }

    /// The last resort comes once, at the fourth re-arm (three, at 0, 1 and 2 s, did not wake the
    /// sensor), not at every later one: the source is asked to rebind the device's driver, which it
    /// does only where motiond.conf allows (`rebind_stalled_sensors`, `HardwareSource.rebind`).
    @Test func theDriverIsReboundOnceAtTheFourthReArm() async throws {
        let (scripted, client, _) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","streams":["accelerometer"],"interval":0.1}"#, on: [Self.laptop])
        #expect(await scripted.advance { !client.messages(of: .accelerometer).isEmpty } != nil)
        let source = scripted.source
        for attempt in 1...CapturePolicy.rebindAttempt - 1 {
            try await scripted.loop.executeInContext { source.tell(.rearming(.silence, attempt: attempt, after: 0), from: Self.laptop.number) }
        }
        await scripted.settle()
        #expect(source.rebound.withLock { $0 } == [])
        for attempt in CapturePolicy.rebindAttempt...CapturePolicy.rebindAttempt + 3 {
            try await scripted.loop.executeInContext { source.tell(.rearming(.silence, attempt: attempt, after: 60), from: Self.laptop.number) }
        }
        await scripted.settle()
        #expect(source.rebound.withLock { $0 } == [Self.laptop.number])
        // The chip came back and its new capture counts from zero: rebound once while the daemon runs
        // (issue 62's review: a dead chip was rebound at every fourth re-arm, for ever).
        try await scripted.loop.executeInContext { source.tell(.rearming(.silence, attempt: CapturePolicy.rebindAttempt, after: 4), from: Self.laptop.number) }
        await scripted.settle()
        #expect(source.rebound.withLock { $0 } == [Self.laptop.number])
        try await scripted.shutDown()
    }

    /// A capture's re-arm (a stall it healed) is counted by device and reason for STATUS and the
    /// metrics (`motiond_sensor_recoveries_total{device,reason}`), and the watch goes on.
    @Test func aReArmIsCountedByDeviceAndReason() async throws {
        let (scripted, client, id) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","streams":["accelerometer"],"interval":0.1}"#, on: [Self.laptop])
        #expect(await scripted.advance { !client.messages(of: .accelerometer).isEmpty } != nil)
        let source = scripted.source
        for attempt in 1...2 {
            try await scripted.loop.executeInContext {
                source.tell(.rearming(.silence, attempt: attempt, after: RecoveryBackoff.delay(beforeAttempt: attempt)), from: Self.laptop.number)
            }
        }
        try await scripted.loop.executeInContext { source.tell(.rearming(.failingReads, attempt: 1, after: 0), from: Self.laptop.number) }
        try await scripted.send(line: #"{"class":"STATUS","id":1}"#, from: id)
        #expect(client.statuses.last?.recoveries == [
            StatusReply.Recovery(device: "iio:device0", reason: "silence", count: 2),
            StatusReply.Recovery(device: "iio:device0", reason: "failing-reads", count: 1),
        ])
        #expect(client.statuses.last?.sleeps == nil)
        let metrics = try await scripted.onLoop { hub in hub.metrics() }
        #expect(metrics.recoveries.map(\.count) == [2, 1])
        #expect(client.ended == [])
        try await scripted.shutDown()
    }
}
