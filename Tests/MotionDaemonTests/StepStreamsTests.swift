import Foundation
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
            var detector = StepDetector()
            for scan in scans {
                let force = Vector3(x: 0, y: 0, z: Double(scan.counts[2]) * Self.accelerometerScale)
                detector.update(specificForce: force, timestamp: scan.time) { _ in }
            }
            #expect(detector.steps >= 30)
            for chunk in stride(from: 0, to: scans.count, by: 50) {
                let bytes = scans[chunk..<min(chunk + 50, scans.count)].flatMap { Testbed.accelerometerScan($0.counts, time: $0.time) }
                try testbed.feed("/dev/iio:device0", bytes)
            }
            var steps = 0
            var activities: [MotionActivityKind] = []
            while steps < detector.steps, let line = try? client.next(seconds: 5) {
                switch try AnyServerMessage(line: Array(line.utf8)) {
                case .pedometer(let m): steps = m.steps
                case .activity(let m): activities.append(m.activity)
                default: break
                }
            }
            #expect(steps == detector.steps)
            #expect(activities.contains(.walking), "\(activities)")
        }
    }
}
