import Foundation
import HubTestKit
import MotionCore
import MotionDevices
import MotionFusion
import MotionWire
import NIOCore
import Testing

@testable import MotionHub

extension ScriptedHub.Client {
    var presences: [PresenceMessage] { values { if case .presence(let m) = $0 { m } else { nil } } }
    var significantMotions: [SignificantMotionMessage] { values { if case .significantMotion(let m) = $0 { m } else { nil } } }
}

/// The `presence` stream on the hub (protocol 1.11): the state first, then each change, debounced
/// (`PresenceDetector`), from an HID human-presence sensor, else from a proximity sensor.
@Suite struct PresenceStreamTests {
    static let watchPresence = #"{"class":"WATCH","streams":["presence"]}"#

    /// A hub on `Machines.proximityOnly` reading 50 counts (far), and a client watching `presence`
    /// that has its first message.
    static func watchingProximityAt50Counts() async throws -> (ScriptedHub, ScriptedHub.Client, DeviceNumber) {
        let sensor = DeviceNumber(0)
        let scripted = try await ScriptedHub(devices: [Machines.proximityOnly])
        scripted.source.counts.withLock { $0[sensor] = [.proximity: Vector3(x: 50, y: 0, z: 0)] }
        let (client, id) = try await scripted.connect()
        try await scripted.send(line: watchPresence, from: id)
        _ = await scripted.advance { !client.presences.isEmpty }
        try #require(!client.presences.isEmpty, "the state first")
        return (scripted, client, sensor)
    }

    /// The phone's stk3310 alone (near at 100 counts, far again below 90), polled at presence's 10 Hz:
    /// the first `PRESENCE` is the state (50 counts: far, absent), then present, absent, present, each
    /// change 1.5 s after the last (none held), each reaching the client within 100 ms (one period at
    /// 10 Hz) of the change on the loop's clock, stamped with the reading that showed it.
    @Test func aProximitySensorsPresenceReachesTheClientWithinATenthOfASecond() async throws {
        let (scripted, client, sensor) = try await Self.watchingProximityAt50Counts()
        #expect(client.presences.map(\.present) == [false])
        #expect(client.presences.first.map { $0.source == .proximity && $0.attention == nil && $0.distance == nil } == true)
        #expect(scripted.source.running(sensor)?.rate == CapturePlan.immediateRate)
        for (count, near) in [(150.0, true), (20, false), (150, true)] {
            await scripted.run(for: .milliseconds(1500))
            let before = client.presences.count
            let changed = scripted.now
            scripted.source.counts.withLock { $0[sensor] = [.proximity: Vector3(x: count, y: 0, z: 0)] }
            #expect(await scripted.advance(upTo: .milliseconds(100)) { client.presences.count > before } != nil, "within 100 ms")
            let arrived = try #require(client.received.last { if case .presence = $0.message { true } else { false } })
            let message = try #require(client.presences.last)
            #expect(message.present == near)
            #expect(Int64(arrived.at.uptimeNanoseconds) - changed <= 100_000_000)
            #expect(message.timestamp >= changed && Int64(arrived.at.uptimeNanoseconds) - message.timestamp <= 100_000_000)
        }
        #expect(client.presences.map(\.present) == [false, true, false, true])
        try await scripted.shutDown()
    }

    /// A change 0.3 s after the last report is held until it has lasted 1 s: the polled sensor's
    /// readings of the same state (10 a second) let it out, 1.0 to 1.1 s after the change, with no
    /// new state read.
    @Test func aHeldChangeIsLetOutByTheNextReadingsOfTheSameState() async throws {
        let (scripted, client, sensor) = try await Self.watchingProximityAt50Counts()
        await scripted.run(for: .milliseconds(1500))
        scripted.source.counts.withLock { $0[sensor] = [.proximity: Vector3(x: 150, y: 0, z: 0)] }
        #expect(await scripted.advance(upTo: .milliseconds(100)) { client.presences.count == 2 } != nil, "present: at once")
        await scripted.run(for: .milliseconds(300))
        let changed = scripted.now
        scripted.source.counts.withLock { $0[sensor] = [.proximity: Vector3(x: 20, y: 0, z: 0)] }
        await scripted.run(for: .milliseconds(900))
        #expect(client.presences.count == 2, "absent 0.3 s after the report: held")
        #expect(await scripted.advance(upTo: .milliseconds(300)) { client.presences.count == 3 } != nil)
        let arrived = Int64(scripted.now) - changed
        #expect(arrived >= 1_000_000_000 && arrived <= 1_100_000_000, "out once it has lasted 1 s (\(arrived) ns)")
        #expect(client.presences.map(\.present) == [false, true, false])
        try await scripted.shutDown()
    }

    /// laptop-human-presence's HID sensor, fed as its buffer hands scans over (counts: presence 1,
    /// distance 65 × 0.01 m, attention 100 %): a watcher gets present, attentive, 0.65 m, from
    /// `human-presence`; a distance alone sends nothing; a second watcher gets the state first (with
    /// the latest distance); the person leaving 2 s later reaches both at once.
    @Test func anHIDSensorsStateComesFirstThenEachChange() async throws {
        let sensor = Machines.humanPresence
        let scripted = try await ScriptedHub(devices: [sensor])
        let (first, firstID) = try await scripted.connect()
        try await scripted.send(line: Self.watchPresence, from: firstID)
        func scan(_ present: Double, _ distance: Double, _ attention: Double) -> [[SensorSample]] {
            [[sensor.sample(.humanPresence, counts: Vector3(x: present, y: distance, z: attention), at: scripted.now)].compactMap { $0 }]
        }
        #expect(try await scripted.feed(scan(1, 65, 100), to: sensor.number), "the presence stream opened the HID sensor")
        let state = try #require(first.presences.first)
        #expect(state.present && state.attention == true && state.source == .humanPresence)
        #expect(abs((state.distance ?? 0) - 0.65) < 1e-12)
        await scripted.run(for: .milliseconds(500))
        try await scripted.feed(scan(1, 120, 100), to: sensor.number)
        #expect(first.presences.count == 1, "a distance alone sends nothing")
        let (second, secondID) = try await scripted.connect()
        try await scripted.send(line: Self.watchPresence, from: secondID)
        let secondState = try #require(second.presences.first)
        #expect(secondState.present && abs((secondState.distance ?? 0) - 1.2) < 1e-12, "the state first, with the latest distance")
        await scripted.run(for: .milliseconds(1500))
        let left = scripted.now
        try await scripted.feed(scan(0, 0, 0), to: sensor.number)
        #expect(first.presences.map(\.present) == [true, false])
        #expect(second.presences.map(\.present) == [true, false])
        #expect(first.presences.last?.attention == false && first.presences.last?.timestamp == left)
        try await scripted.shutDown()
    }

    /// A hub on `Machines.humanPresence` whose HID sensor reports only changes (hid-sensor-prox with
    /// its hysteresis kept), and a client watching `presence` that got the first scan's state
    /// (present) at `t0` on the loop's clock, which is the samples' clock: `ScriptedHub.now` stamps
    /// them with the testing loop's `NIODeadline.uptimeNanoseconds`, as the daemon's are stamped on
    /// CLOCK_MONOTONIC, the clock of NIO's deadlines.
    static func watchingAnHIDSensorThatReportsOnlyChanges() async throws -> (ScriptedHub, ScriptedHub.Client, t0: Int64) {
        let scripted = try await ScriptedHub(devices: [Machines.humanPresence])
        let (client, id) = try await scripted.connect()
        try await scripted.send(line: watchPresence, from: id)
        let t0 = scripted.now
        try #require(try await scripted.feed(scan(present: true, on: scripted), to: Machines.humanPresence.number))
        try #require(client.presences.map(\.present) == [true], "present: the state, at once")
        return (scripted, client, t0)
    }

    /// One scan of the HID sensor now: presence 1 or 0, at 0.65 m, attentive (only presence changes).
    static func scan(present: Bool, on scripted: ScriptedHub) -> [[SensorSample]] {
        let sensor = Machines.humanPresence
        return [[sensor.sample(.humanPresence, counts: Vector3(x: present ? 1 : 0, y: 65, z: 100), at: scripted.now)].compactMap { $0 }]
    }

    /// Present reported at t0; absent at t0 + 0.3 s began 0.3 s after that report, so it is held until
    /// it has lasted 1 s (protocol 1.11: "the next is held until the new state has lasted 1 s … the
    /// state it settles in follows within 1 s"): due at t0 + 1.3 s. The sensor then says nothing more,
    /// yet the client gets absent at exactly t0 + 1.3 s on the loop's clock, stamped so, and not a
    /// nanosecond before: the hub's timer lets it out, no reading.
    @Test func aHeldChangeOfASensorThatReportsOnlyChangesIsSentWhenItHasLastedOneSecond() async throws {
        let (scripted, client, t0) = try await Self.watchingAnHIDSensorThatReportsOnlyChanges()
        await scripted.run(for: .milliseconds(300))
        #expect(scripted.now == t0 + 300_000_000)
        try await scripted.feed(Self.scan(present: false, on: scripted), to: Machines.humanPresence.number)
        #expect(client.presences.count == 1, "absent 0.3 s after the report: held")
        let due = t0 + 1_300_000_000
        await scripted.loop.advanceTime(to: .uptimeNanoseconds(UInt64(due - 1)))
        await scripted.settle()
        #expect(client.presences.count == 1, "not before the hold's end")
        await scripted.loop.advanceTime(by: .nanoseconds(1))
        await scripted.settle()
        #expect(client.presences.map(\.present) == [true, false])
        let arrived = try #require(client.received.last { if case .presence = $0.message { true } else { false } })
        #expect(Int64(arrived.at.uptimeNanoseconds) == due)
        #expect(client.presences.last?.timestamp == due && client.presences.last?.source == .humanPresence)
        await scripted.run(for: .seconds(2))
        #expect(client.presences.count == 2, "sent once")
        try await scripted.shutDown()
    }

    /// The same, but present again at t0 + 0.8 s, before the absence was due (t0 + 1.3 s): the state
    /// reported is the state read, nothing is held, and nothing is sent in the 3 s after (the timer
    /// for t0 + 1.3 s was cancelled).
    @Test func aFlapBackBeforeTheHoldsEndSendsNothing() async throws {
        let (scripted, client, t0) = try await Self.watchingAnHIDSensorThatReportsOnlyChanges()
        await scripted.run(for: .milliseconds(300))
        try await scripted.feed(Self.scan(present: false, on: scripted), to: Machines.humanPresence.number)
        await scripted.run(for: .milliseconds(500))
        #expect(scripted.now == t0 + 800_000_000)
        try await scripted.feed(Self.scan(present: true, on: scripted), to: Machines.humanPresence.number)
        await scripted.run(for: .seconds(3))
        #expect(client.presences.map(\.present) == [true], "the flap sent nothing")
        try await scripted.shutDown()
    }
}

/// The chip's events as messages: `gesture`'s on-body and off-body, and `SIGNIFICANT_MOTION`.
@Suite struct ChipEventTests {
    static let activity = DeviceNumber(1)

    /// The cros-ec-activity chip's on-body readings (1 on body, 0 off) while `gesture` is watched: the
    /// first is the state gestures start from (a gesture has no current state: nothing sent), then one
    /// gesture per change: on-body, nothing for the same state again, off-body.
    @Test func onBodyAndOffBodyAreGesturesOfTheChipsChanges() async throws {
        let scripted = try await ScriptedHub(devices: Machines.chromebook)
        let (client, id) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["gesture"]}"#, from: id)
        for worn in [0.0, 1, 1, 0] {
            let sample = SensorSample(kind: .onBody, device: Self.activity, timestamp: scripted.now, vector: Vector3(x: worn, y: 0, z: 0))
            #expect(try await scripted.feed([[sample]], to: Self.activity), "gesture opened the chip's on-body detection")
            await scripted.run(for: .milliseconds(200))
        }
        #expect(client.gestures.map(\.gesture) == [.onBody, .offBody])
        try await scripted.shutDown()
    }

    /// The chip's significant-motion event (one sample of 1) while `significant_motion` is watched: a
    /// `SIGNIFICANT_MOTION` from `significant-motion`, stamped with the event's instant.
    @Test func theChipsSignificantMotionIsSent() async throws {
        let scripted = try await ScriptedHub(devices: Machines.chromebook)
        let (client, id) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["significant_motion"]}"#, from: id)
        let t = scripted.now
        let sample = SensorSample(kind: .significantMotion, device: Self.activity, timestamp: t, vector: Vector3(x: 1, y: 0, z: 0))
        #expect(try await scripted.feed([[sample]], to: Self.activity), "significant_motion opened the chip's sensor")
        #expect(client.significantMotions.map(\.source) == [.significantMotion])
        #expect(client.significantMotions.first?.timestamp == t)
        try await scripted.shutDown()
    }
}

/// `SIGNIFICANT_MOTION` from the step detector where no chip gives it, through the hub.
@Suite struct SoftwareSignificantMotionStreamTests {
    /// A real walk (60 s, a phone in a back pocket, 50 Hz: MotionFusionTests/Fixtures/README.md) fed
    /// to imu-buffered's accelerometer while only `significant_motion` is watched: one
    /// `SIGNIFICANT_MOTION` from `accelerometer`, at the instant the library's step detector and
    /// significant-motion detector find it on the same recording (the step detector is fed for the
    /// stream alone).
    @Test func aRecordedWalkIsOneSignificantMotionFromTheAccelerometer() async throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../MotionFusionTests/Fixtures")
        let walk = try AccelerometerTable(csv: String(contentsOf: fixtures.appendingPathComponent("steps-backpocket-walk.csv"), encoding: .utf8))
        var steps = StepDetector()
        var significant = SignificantMotionDetector()
        var expected: [Int64] = []
        for row in walk.rows {
            steps.update(specificForce: row.specificForce, timestamp: row.timestamp) { _ in }
            if significant.update(isWalking: steps.isWalking, timestamp: row.timestamp) { expected.append(row.timestamp) }
        }
        #expect(expected.count == 1, "the library finds one in a minute's walk")
        let (scripted, client, _) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","streams":["significant_motion"]}"#, on: [Machines.imu])
        try await scripted.feed(Machines.imu.reads(of: walk.rows), to: Machines.imu.number)
        #expect(client.significantMotions.map(\.source) == [.accelerometer])
        #expect(client.significantMotions.map(\.timestamp) == expected)
        try await scripted.shutDown()
    }
}

/// `SIGNIFICANT_MOTION` from the step detector where no chip gives it, on the event stage itself.
@Suite struct SoftwareSignificantMotionTests {
    /// An accelerometer sample at `t` s, lying still (the walk is told by `isWalking`).
    static func still(at t: Double) -> SensorSample {
        SensorSample(kind: .accelerometer, device: DeviceNumber(0), timestamp: Int64(t * 1e9), vector: Vector3(x: 0, y: 0, z: Units.standardGravity))
    }

    /// What the stage sends of 10 s at 25 Hz, a walk under way from 1 s on.
    static func walk(_ stage: inout EventStage) -> [AnyServerMessage] {
        var sent: [AnyServerMessage] = []
        for i in 0..<250 {
            let t = Double(i) / 25
            stage.take(still(at: t), isWalking: t >= 1) { sent.append($0) }
        }
        return sent
    }

    /// The walk that began at 1 s has lasted `SignificantMotionDetector`'s 5 s at 6 s, after no other:
    /// one `SIGNIFICANT_MOTION` from `accelerometer` then, as `gesture`'s significant motion (which a
    /// `gesture` watcher gets beside it); none while a chip's significant-motion sensor runs, none
    /// while the stream is not wanted.
    @Test func theStepDetectorsSignificantMotionIsSentWhereNoChipGivesIt() {
        var stage = EventStage()
        stage.follow(running: [.accelerometer])
        stage.follow(wanted: [.significantMotion, .gesture])
        let sent = Self.walk(&stage)
        let motions = sent.compactMap { if case .significantMotion(let m) = $0 { m } else { nil } }
        #expect(motions.map(\.source) == [.accelerometer])
        #expect(motions.first?.timestamp == 6_000_000_000)
        let gestures = sent.compactMap { if case .gesture(let m) = $0 { m } else { nil } }
        #expect(gestures.map(\.gesture) == [.significantMotion] && gestures.first?.timestamp == 6_000_000_000)

        var withChip = EventStage()
        withChip.follow(running: [.accelerometer, .significantMotion])
        withChip.follow(wanted: [.significantMotion])
        #expect(!Self.walk(&withChip).contains { if case .significantMotion = $0 { true } else { false } })

        var unwanted = EventStage()
        unwanted.follow(running: [.accelerometer])
        unwanted.follow(wanted: [.orientation])
        #expect(!Self.walk(&unwanted).contains { if case .significantMotion = $0 { true } else { false } })
        #expect(unwanted.latest(.significantMotion) == nil, "a trigger has no state")
    }
}

/// Presence beside a running IMU: the IMU's capture paces the fusion (`SampleMerger` holds other
/// devices' samples until the pace's pass them), but presence is no input of the fusion, so its
/// changes go through at once even while the IMU gives nothing (a buffered IMU between batches, an
/// accelerometer resting on its motion events, read every 30 s).
@Suite struct PresenceBesideAnIMUTests {
    @Test func aPresenceChangeIsNotHeldBehindASilentIMU() async throws {
        var sensor = Machines.humanPresence
        sensor.number = DeviceNumber(1)
        let scripted = try await ScriptedHub(devices: [Machines.imu, sensor])
        let (client, id) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["motion","presence"]}"#, from: id)
        func scan(_ present: Double) -> [[SensorSample]] {
            [[sensor.sample(.humanPresence, counts: Vector3(x: present, y: 65, z: 100), at: scripted.now)].compactMap { $0 }]
        }
        try #require(try await scripted.feed(scan(1), to: sensor.number), "the presence stream opened the HID sensor")
        #expect(client.presences.map(\.present) == [true], "the state at once, no IMU scan fed")
        await scripted.run(for: .milliseconds(1500))
        try await scripted.feed(scan(0), to: sensor.number)
        #expect(client.presences.map(\.present) == [true, false], "the change at once, no IMU scan fed")
        try await scripted.shutDown()
    }
}
