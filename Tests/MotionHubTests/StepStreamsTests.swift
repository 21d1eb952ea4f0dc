import Foundation
import HubTestKit
import MotionCore
import MotionDevices
import MotionFusion
import MotionWire
import NIOCore
import Testing

@testable import MotionHub

/// The gait's streams (`pedometer`, `activity`, `gesture`) and `HISTORY` (docs/protocol.md), on the
/// imu-buffered machine's accelerometer, its samples fed by the test. Moved from Hardware.Server
/// (StepStreamsTests there), with the same walks, expectations and references.
@Suite struct StepStreamsTests {
    static let imu = Machines.imu
    /// The fixture's accelerometer scale, m/s² per count (`in_accel_scale`).
    static let accelerometerScale = 0.000598

    /// `seconds` of a walk as the fixture's scans at 50 Hz: 1.8 steps/s, each a vertical jolt (a
    /// raised cosine of 3 m/s²) on gravity along z, in raw counts.
    static func walkScans(seconds: Int, from start: Int64) -> [(counts: Vector3, time: Int64)] {
        (0..<(seconds * 50)).map { i in
            let t = Double(i) / 50
            let phase = (t * 1.8).truncatingRemainder(dividingBy: 1)
            let jolt = phase < 0.3 ? 3 * (1 - cos(2 * .pi * phase / 0.3)) / 2 : 0
            return (Vector3(x: 0, y: 0, z: ((9.81 + jolt) / accelerometerScale).rounded()), start + Int64(i) * 20_000_000)
        }
    }

    /// What the library counts on `scans`.
    static func stepsCounted(in scans: [(counts: Vector3, time: Int64)]) -> Int {
        var detector = StepDetector()
        for scan in scans {
            detector.update(specificForce: Vector3(x: 0, y: 0, z: scan.counts.z * accelerometerScale), timestamp: scan.time) { _ in }
        }
        return detector.steps
    }

    /// `scans` as the accelerometer's reads, one scan each.
    static func reads(_ scans: [(counts: Vector3, time: Int64)]) -> [[SensorSample]] {
        scans.map { [imu.sample(.accelerometer, counts: $0.counts, at: $0.time)!] }
    }

    /// A poll from cold is answered as soon as the accelerometer has given a sample: no steps yet,
    /// and an activity not yet known (it used to wait 2 s for one to hold, as long as the poll's own
    /// time limit, and fail with `timeout`).
    @Test func aPollOfStepsAndActivityIsAnsweredOnTheFirstSample() async throws {
        let (scripted, client, _) = try await ScriptedHub.withClient(sending: #"{"class":"POLL","id":1,"streams":["pedometer","activity"]}"#, on: [Self.imu])
        try await scripted.feed([[Self.imu.sample(.accelerometer, counts: Vector3(x: 0, y: 0, z: 16384), at: 1_000_000)!]], to: Self.imu.number)
        let snapshot = try #require(client.snapshots.first)
        #expect(snapshot.pedometer?.steps == 0)
        #expect(snapshot.activity?.activity == .unknown && snapshot.activity?.confidence == .low)
        #expect(snapshot.activity?.start == 1_000_000)
        try await scripted.shutDown()
    }

    /// The hub's `pedometer` stream counts what the library counts on the same samples, and
    /// `activity` says walking; the accelerometer runs at the step detector's 25 Hz.
    @Test func theStepStreamsCountAWalkFedToTheAccelerometerAsTheLibraryDoes() async throws {
        let (scripted, client, _) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","streams":["pedometer","activity"]}"#, on: [Self.imu])
        #expect(client.pedometers.first?.steps == 0, "the count when watching starts")
        #expect(scripted.source.running(Self.imu.number)?.deviceRate == 25)
        let scans = Self.walkScans(seconds: 20, from: 1_000_000_000)
        let expected = Self.stepsCounted(in: scans)
        #expect(expected >= 30)
        try await scripted.feed(Self.reads(scans), to: Self.imu.number)
        #expect(client.pedometers.last?.steps == expected)
        #expect(client.activities.map(\.activity).contains(.walking), "\(client.activities.map(\.activity))")
        try await scripted.shutDown()
    }

    /// A phone lying flat, then taken up to face the user (60° in 0.6 s), is one `pick-up` on the
    /// `gesture` stream, which sends nothing when watching starts (a gesture has no state).
    @Test func aPhoneTakenUpIsOnePickUpGesture() async throws {
        let (scripted, client, _) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","streams":["gesture"]}"#, on: [Self.imu])
        #expect(client.gestures.isEmpty, "nothing when watching starts")
        let start: Int64 = 1_000_000_000
        let scans = (0..<200).map { i -> (counts: Vector3, time: Int64) in
            let t = Double(i) / 50
            let progress = t < 2 ? 0 : t > 2.6 ? 1 : (1 - cos(.pi * (t - 2) / 0.6)) / 2
            let angle = 60 * Double.pi / 180 * progress
            let counts = Vector3(x: 0, y: (9.81 * sin(angle) / Self.accelerometerScale).rounded(), z: (9.81 * cos(angle) / Self.accelerometerScale).rounded())
            return (counts, start + Int64(i) * 20_000_000)
        }
        try await scripted.feed(Self.reads(scans), to: Self.imu.number)
        let gesture = try #require(client.gestures.first)
        #expect(gesture.gesture == .pickUp)
        #expect(gesture.timestamp > start + 2_000_000_000 && gesture.timestamp < start + 3_000_000_000, "during the turn: \(gesture)")
        #expect(client.gestures.count == 1, "one gesture, nothing else")
        try await scripted.shutDown()
    }

    /// Bad ranges and other streams are refused, saying why; the client goes on being served.
    @Test(arguments: [
        (#"{"class":"HISTORY","stream":"motion","from":0}"#, "invalid_argument"),
        (#"{"class":"HISTORY","stream":"pedometer","from":10,"to":5}"#, "invalid_argument"),
        // A number no Double holds is malformed, as a value of the wrong kind is (issue 40, defect 12).
        (#"{"class":"HISTORY","stream":"pedometer","from":1e400}"#, "malformed"),
        (#"{"class":"HISTORY","stream":"pedometer"}"#, "malformed"),
        (#"{"class":"HISTORY","stream":"pedometer","from":"yesterday"}"#, "malformed"),
    ])
    func aBadHistoryRequestIsRefused(request: String, code: String) async throws {
        let scripted = try await ScriptedHub(devices: [Self.imu])
        let (client, id) = try await scripted.connect()
        try await scripted.send(line: request, from: id)
        #expect(client.errors.last?.code.rawValue == code)
        // The hub reads the wall clock between these two readings of it: the week kept ends then, so
        // the bounds hold whatever the load (a full CI run starved the test 5 s after the reply).
        let week = 7.0 * 86_400
        let asked = Date().timeIntervalSince1970
        try await scripted.send(line: #"{"class":"HISTORY","stream":"pedometer","from":0}"#, from: id)
        let answered = Date().timeIntervalSince1970
        let reply = try #require(client.histories.last)
        #expect(reply.steps == 0 && reply.from >= asked - week - 0.001 && reply.from <= answered - week + 0.001, "from is clipped to the week kept: \(reply)")
        try await scripted.shutDown()
    }

    /// A walk is in `HISTORY` (its steps in this minute or the last, its activity), a taller walker
    /// set by a reload makes the same steps a longer way, and the count and the history are what a
    /// hub started again on the same state directory serves.
    @Test func theCountAndItsHistoryOutliveARestart() async throws {
        let state = NSTemporaryDirectory() + "motiond-history-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: state) }
        // Stamped as a real driver would: CLOCK_MONOTONIC, the last 20 s (the history is in wall-clock
        // time, converted from the samples' own instants).
        let scans = Self.walkScans(seconds: 20, from: Int64(ProcessInfo.processInfo.systemUptime * 1e9) - 20_000_000_000)
        let expected = Self.stepsCounted(in: scans)
        // HISTORY counts the minutes that begin in the range: the walk's first minute began up to 80 s
        // ago (a walk of 20 s that crossed into a new minute); 61 s missed it in a minute's first 20 s.
        let before = Date().timeIntervalSince1970 - 121
        let history = #"{"class":"HISTORY","id":1,"stream":"pedometer","from":\#(before)}"#

        let first = try await ScriptedHub(devices: [Self.imu], store: StateStore(directory: state))
        let (client, id) = try await first.connect()
        try await first.send(line: #"{"class":"WATCH","streams":["pedometer","activity"]}"#, from: id)
        try await first.feed(Self.reads(scans), to: Self.imu.number)
        #expect(client.pedometers.last?.steps == expected)
        try await first.send(line: history, from: id)
        let reply = try #require(client.histories.last)
        #expect(reply.steps == expected && reply.distance == Double(expected) * 0.415 * 1.70, "\(reply)")
        var taller = LiveSettings.defaults
        taller.height = 2.0
        try await first.onLoop { [taller] hub in hub.apply(taller) }
        try await first.send(line: history, from: id)
        let longer = try #require(client.histories.last)
        #expect(abs((longer.distance ?? 0) - Double(expected) * 0.415 * 2.0) < 1e-9, "\(longer)")
        try await first.send(line: #"{"class":"HISTORY","id":2,"stream":"activity","from":\#(before)}"#, from: id)
        let activities = client.histories.last?.activities ?? []
        #expect(activities.map(\.activity).contains(.walking), "\(activities)")
        #expect(activities.allSatisfy { $0.start > before && $0.start < Date().timeIntervalSince1970 }, "wall-clock times: \(activities)")
        try await first.shutDown()

        let second = try await ScriptedHub(devices: [Self.imu], store: StateStore(directory: state))
        let (again, againID) = try await second.connect()
        try await second.send(line: #"{"class":"WATCH","streams":["pedometer"]}"#, from: againID)
        #expect(again.pedometers.first?.steps == expected)
        try await second.send(line: history, from: againID)
        #expect(again.histories.last?.steps == expected)
        try await second.shutDown()
    }

    /// A real walk (60 s with the phone in a back pocket, 50 Hz, 111 steps by the pressure pads under
    /// the heels: MotionFusionTests/Fixtures/README.md, the Oxford step counter data set) fed through the
    /// hub: `pedometer` says what the library counts on the same recording, within 3 % of the pads'
    /// steps (StepDetectorTests' bound), and `activity` says walking.
    @Test func aRecordedWalkIsCountedByThePedometerStreamAsTheLibraryCountsIt() async throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../MotionFusionTests/Fixtures")
        let walk = try AccelerometerTable(csv: String(contentsOf: fixtures.appendingPathComponent("steps-backpocket-walk.csv"), encoding: .utf8))
        var detector = StepDetector()
        for row in walk.rows { detector.update(specificForce: row.specificForce, timestamp: row.timestamp) { _ in } }
        #expect(abs(Double(detector.steps - 111)) / 111 <= 0.03, "the library counted \(detector.steps)")
        let (scripted, client, _) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","streams":["pedometer","activity"]}"#, on: [Self.imu])
        try await scripted.feed(Self.imu.reads(of: walk.rows), to: Self.imu.number)
        #expect(client.pedometers.last?.steps == detector.steps)
        #expect(client.activities.map(\.activity).contains(.walking), "\(client.activities.map(\.activity))")
        try await scripted.shutDown()
    }
}
