import Foundation
import HubTestKit
import MotionCore
import MotionDaemon
import MotionFusion
import TestSupport

extension MotionServer {
    /// Runs `body` with the server started, then stops it, whether `body` threw or not (a test's
    /// `defer` cannot wait for the stop).
    func whileServing(_ body: () async throws -> Void) async throws {
        let outcome: Result<Void, any Error>
        do {
            try await body()
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        try await stop()
        try outcome.get()
    }
}

/// A walk on the imu-buffered fixture's accelerometer, for the daemon's tests of its kept state
/// (StateFileTests); the step streams' own rules are the hub's (MotionHubTests' StepStreamsTests).
extension StateFileTests {
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

    /// What the library counts on `scans`.
    static func stepsCounted(in scans: [(counts: [Int], time: Int64)]) -> Int {
        var detector = StepDetector()
        for scan in scans {
            let force = Vector3(x: 0, y: 0, z: Double(scan.counts[2]) * accelerometerScale)
            detector.update(specificForce: force, timestamp: scan.time) { _ in }
        }
        return detector.steps
    }

    /// Feeds `scans` to the kit's IMU (`Machines.imu`, the fixture's bmi160), each a read, as its
    /// buffer hands its scans over; throws if its capture is not open to take them.
    static func feed(_ scans: [(counts: [Int], time: Int64)], to source: ScriptedSource) throws {
        let imu = Machines.imu
        let reads = scans.map { imu.scan(accelerometer: Vector3(x: Double($0.counts[0]), y: Double($0.counts[1]), z: Double($0.counts[2])), at: $0.time) }
        guard source.feed(reads, to: imu.number) else { throw TestbedError("the IMU's capture is not open") }
    }
}
