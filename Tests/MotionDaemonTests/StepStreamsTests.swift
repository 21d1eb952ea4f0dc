import Foundation
import MotionConfiguration
import MotionCore
import MotionFusion
import MotionWire
import Testing
import TestSupport

@testable import MotionDaemon

extension Hardware.Server {
    /// The fixture's accelerometer scale, m/s² per count (`in_accel_scale`).
    static let accelerometerScale = 0.000598

    /// `count` seconds of a walk as the fixture's scans at 50 Hz: 1.8 steps/s, each a vertical jolt
    /// (a raised cosine of 3 m/s²) on gravity along z, in raw counts.
    static func walkScans(seconds: Int, from start: Int64) -> [(counts: [Int], time: Int64)] {
        (0..<(seconds * 50)).map { i in
            let t = Double(i) / 50
            let phase = (t * 1.8).truncatingRemainder(dividingBy: 1)
            let jolt = phase < 0.3 ? 3 * (1 - cos(2 * .pi * phase / 0.3)) / 2 : 0
            return ([0, 0, Int(((9.81 + jolt) / accelerometerScale).rounded())], start + Int64(i) * 20_000_000)
        }
    }

    /// A poll from cold is answered as soon as the accelerometer has given a sample: no steps yet,
    /// and an activity not yet known (it used to wait 2 s for one to hold, as long as the poll's own
    /// time limit, and fail with `timeout`).
    @Test func aPollOfStepsAndActivityIsAnsweredOnTheFirstSample() async throws {
        let (testbed, server) = try await Self.startServerOnIMU()
        try await server.whileServing {
            let client = try TestClient.greeted(path: server.socketPath)
            try client.send(#"{"class":"POLL","id":1,"streams":["pedometer","activity"]}"#)
            try waitUntil { (try? testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("1") == true }
            try testbed.feed("/dev/iio:device0", Testbed.accelerometerScan([0, 0, 16384], time: 1_000_000))
            let snapshot = try client.decode(Snapshot.self, try client.next("SNAPSHOT"))
            #expect(snapshot.pedometer?.steps == 0)
            #expect(snapshot.activity?.activity == .unknown && snapshot.activity?.confidence == .low)
            #expect(snapshot.activity?.start == 1_000_000)
        }
    }

    /// The daemon's `pedometer` stream counts what the library counts on the same samples, and
    /// `activity` says walking; the accelerometer runs at the step detector's 25 Hz.
    @Test func theStepStreamsCountAWalkFedToTheAccelerometerAsTheLibraryDoes() async throws {
        let (testbed, server) = try await Self.startServerOnIMU()
        try await server.whileServing {
            let client = try TestClient.greeted(path: server.socketPath)
            try client.send(#"{"class":"WATCH","streams":["pedometer","activity"]}"#)
            _ = try client.next("WATCHING")
            #expect(try client.decode(PedometerMessage.self, try client.next("PEDOMETER")).steps == 0)
            try waitUntil { (try? testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("1") == true }
            #expect(try testbed.attribute("iio:device0", "sampling_frequency").hasPrefix("25"))

            let scans = Self.walkScans(seconds: 20, from: 1_000_000_000)
            let expected = Self.stepsCounted(in: scans)
            #expect(expected >= 30)
            try Self.feed(scans, to: testbed)
            var steps = 0
            var activities: [MotionActivityKind] = []
            while steps < expected, let line = try? client.next(seconds: 5) {
                switch try AnyServerMessage(line: Array(line.utf8)) {
                case .pedometer(let m): steps = m.steps
                case .activity(let m): activities.append(m.activity)
                default: break
                }
            }
            #expect(steps == expected)
            #expect(activities.contains(.walking), "\(activities)")
        }
    }

    /// What the library counts on `scans`.
    static func stepsCounted(in scans: [(counts: [Int], time: Int64)]) -> Int {
        var detector = StepDetector()
        for scan in scans {
            let force = Vector3(x: 0, y: 0, z: Double(scan.counts[2]) * accelerometerScale)
            detector.update(specificForce: force, timestamp: scan.time) { _ in }
        }
        return detector.steps
    }

    /// Feeds `scans` to the fixture's accelerometer a second at a time.
    static func feed(_ scans: [(counts: [Int], time: Int64)], to testbed: Testbed) throws {
        for chunk in stride(from: 0, to: scans.count, by: 50) {
            let bytes = scans[chunk..<min(chunk + 50, scans.count)].flatMap { Testbed.accelerometerScan($0.counts, time: $0.time) }
            try testbed.feed("/dev/iio:device0", bytes)
        }
    }

    /// A walk is in `HISTORY` (its steps in this minute or the last, its activity), and the count
    /// and the history are what a daemon started again on the same state directory serves.
    @Test func theCountAndItsHistoryOutliveARestart() async throws {
        let testbed = try Testbed()
        try testbed.add(fixture: "imu-buffered")
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

        let first = MotionServer(socketPath: Self.socketPath(), stateDirectory: state)
        try await first.start()
        try await first.whileServing {
            let client = try TestClient.greeted(path: first.socketPath)
            try client.send(#"{"class":"WATCH","streams":["pedometer","activity"]}"#)
            _ = try client.next("WATCHING")
            try waitUntil { (try? testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("1") == true }
            try Self.feed(scans, to: testbed)
            var steps = 0
            while steps < expected, let line = try? client.next(seconds: 5) {
                if case .pedometer(let m) = try AnyServerMessage(line: Array(line.utf8)) { steps = m.steps }
            }
            try client.send(history)
            let reply = try client.decode(HistoryReply.self, try client.next("HISTORY"))
            #expect(reply.steps == expected && reply.distance == Double(expected) * 0.415 * 1.70, "\(reply)")
            // A taller walker set by a reload: the same steps are a longer way.
            var settings = Configuration()
            settings.height = 2.0
            first.apply(settings)  // on the hub's loop, which may read the next request first: asked until applied
            var taller = reply
            for _ in 0..<20 where taller.distance == reply.distance {
                try client.send(history)
                taller = try client.decode(HistoryReply.self, try client.next("HISTORY"))
            }
            #expect(abs((taller.distance ?? 0) - Double(expected) * 0.415 * 2.0) < 1e-9, "\(taller)")
            try client.send(#"{"class":"HISTORY","id":2,"stream":"activity","from":\#(before)}"#)
            let activities = try client.decode(HistoryReply.self, try client.next("HISTORY")).activities ?? []
            #expect(activities.map(\.activity).contains(.walking), "\(activities)")
            #expect(activities.allSatisfy { $0.start > before && $0.start < Date().timeIntervalSince1970 }, "wall-clock times: \(activities)")
        }

        let second = MotionServer(socketPath: Self.socketPath(), stateDirectory: state)
        try await second.start()
        try await second.whileServing {
            let client = try TestClient.greeted(path: second.socketPath)
            try client.send(#"{"class":"WATCH","streams":["pedometer"]}"#)
            _ = try client.next("WATCHING")
            #expect(try client.decode(PedometerMessage.self, try client.next("PEDOMETER")).steps == expected)
            try client.send(history)
            #expect(try client.decode(HistoryReply.self, try client.next("HISTORY")).steps == expected)
        }
    }

    /// A phone lying flat, then taken up to face the user (60° in 0.6 s), is one `pick-up` on the
    /// `gesture` stream, which sends nothing when watching starts (a gesture has no state).
    @Test func aPhoneTakenUpIsOnePickUpGesture() async throws {
        let (testbed, server) = try await Self.startServerOnIMU()
        try await server.whileServing {
            let client = try TestClient.greeted(path: server.socketPath)
            try client.send(#"{"class":"WATCH","streams":["gesture"]}"#)
            _ = try client.next("WATCHING")
            try waitUntil { (try? testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("1") == true }
            let start = Int64(ProcessInfo.processInfo.systemUptime * 1e9)
            let scans = (0..<200).map { i -> (counts: [Int], time: Int64) in
                let t = Double(i) / 50
                let progress = t < 2 ? 0 : t > 2.6 ? 1 : (1 - cos(.pi * (t - 2) / 0.6)) / 2
                let angle = 60 * Double.pi / 180 * progress
                let counts = [0, 9.81 * sin(angle), 9.81 * cos(angle)].map { Int(($0 / Self.accelerometerScale).rounded()) }
                return (counts, start + Int64(i) * 20_000_000)
            }
            try Self.feed(scans, to: testbed)
            let gesture = try client.decode(GestureMessage.self, try client.next("GESTURE"))
            #expect(gesture.gesture == .pickUp)
            #expect(gesture.timestamp > start + 2_000_000_000 && gesture.timestamp < start + 3_000_000_000, "during the turn: \(gesture)")
            #expect((try? client.next(seconds: 1)) == nil, "one gesture, nothing else")
        }
    }

    /// Bad ranges and other streams are refused, saying why; the connection goes on.
    @Test(arguments: [
        (#"{"class":"HISTORY","stream":"motion","from":0}"#, "invalid_argument"),
        (#"{"class":"HISTORY","stream":"pedometer","from":10,"to":5}"#, "invalid_argument"),
        // A number no Double holds is malformed, as a value of the wrong kind is (issue 40, defect 12).
        (#"{"class":"HISTORY","stream":"pedometer","from":1e400}"#, "malformed"),
        (#"{"class":"HISTORY","stream":"pedometer"}"#, "malformed"),
        (#"{"class":"HISTORY","stream":"pedometer","from":"yesterday"}"#, "malformed"),
    ])
    func aBadHistoryRequestIsRefused(request: String, code: String) async throws {
        let (_, server) = try await Self.startServerOnIMU()
        try await server.whileServing {
            let client = try TestClient.greeted(path: server.socketPath)
            try client.send(request)
            #expect(try client.decode(ErrorReply.self, try client.next("ERROR")).code.rawValue == code)
            try client.send(#"{"class":"HISTORY","stream":"pedometer","from":0}"#)
            let reply = try client.decode(HistoryReply.self, try client.next("HISTORY"))
            #expect(reply.steps == 0 && reply.from > Date().timeIntervalSince1970 - 7 * 86_400 - 5, "from is clipped to the week kept: \(reply)")
        }
    }
}
