import MotionCore
import Testing

@testable import MotionDevices

/// When a polled magnetometer's readings were taken (`ChangeInstant`), against a simulated sensor
/// whose true measurement instants are known.
@Suite struct ChangeInstantTests {
    /// A sensor measuring every `sensorPeriod` ns (its value the measurement's number), read every
    /// `readPeriod` ns from `phase` on: each reading taken for a new measurement (stamp, true instant
    /// of the value), and the stamps of those marked as repeats.
    static func simulate(sensorPeriod: Int64, readPeriod: Int64, phase: Int64, reads: Int)
        -> (measurements: [(stamp: Int64, truth: Int64)], repeats: [Int64])
    {
        var instants = ChangeInstant()
        var measurements: [(Int64, Int64)] = []
        var repeats: [Int64] = []
        for k in 0..<reads {
            let now = phase + Int64(k) * readPeriod
            let measurement = now / sensorPeriod
            let (stamp, isRepeat) = instants.instant(of: Vector3(x: Double(measurement), y: 1, z: 2), readAt: now)
            if isRepeat { repeats.append(stamp) } else { measurements.append((stamp, measurement * sensorPeriod)) }
        }
        return (measurements, repeats)
    }

    /// A 100 Hz magnetometer read at 285.7 Hz (BROAD's IMU rate, the rate motion asks): each
    /// measurement is taken once, stamped without bias and within half a read period (1.75 ms) of its
    /// instant, where the read instant was late by 1.75 ms on average and its repeats later still; the
    /// other reads are marked as repeats, in time order with the rest.
    @Test func aSensorReadFasterThanItMeasuresIsStampedHalfwayAndItsRepeatsMarked() {
        let (emitted, repeats) = Self.simulate(sensorPeriod: 10_000_000, readPeriod: 3_500_000, phase: 1_234_567, reads: 2_860)
        let measurements = Set(emitted.map(\.truth))
        #expect(emitted.count == measurements.count, "each measurement once")
        #expect(measurements.count >= 999)
        #expect(repeats.count == 2_860 - emitted.count)
        let all = (emitted.map(\.stamp) + repeats).sorted()
        #expect(zip(all, all.dropFirst()).allSatisfy { $0 < $1 }, "no two stamps alike")
        let errors = emitted.dropFirst(10).map { Double($0.stamp - $0.truth) * 1e-6 }
        let meanError = errors.reduce(0, +) / Double(errors.count)
        #expect(abs(meanError) < 0.2, "mean error \(meanError) ms: the midpoint is unbiased")
        #expect(errors.allSatisfy { abs($0) <= 1.75 + 1e-9 }, "never off by more than half a read period")
        #expect(zip(emitted, emitted.dropFirst()).allSatisfy { $0.stamp < $1.stamp }, "in order")
    }

    /// Read slower than it measures (25 Hz reads of a 100 Hz sensor), every reading is new and its
    /// value fresh: stamped at the read, not 20 ms back.
    @Test func aSensorReadSlowerThanItMeasuresIsStampedAtTheRead() {
        let (emitted, repeats) = Self.simulate(sensorPeriod: 10_000_000, readPeriod: 40_000_000, phase: 5_000_000, reads: 100)
        #expect(emitted.count == 100 && repeats.isEmpty)
        #expect(emitted.allSatisfy { ($0.stamp - 5_000_000) % 40_000_000 == 0 }, "at the read instants")
        #expect(emitted.allSatisfy { $0.stamp - $0.truth < 10_000_000 }, "within the sensor's period of its measurement")
    }

    /// A value that holds (a field quantised to the same counts) is still a measurement every 100 ms.
    @Test func aValueThatHoldsIsAMeasurementTenTimesASecond() {
        var instants = ChangeInstant()
        var stamps: [Int64] = []
        for k in 0..<286 {
            let now = Int64(k) * 3_500_000
            let (stamp, isRepeat) = instants.instant(of: Vector3(x: 3, y: 1, z: 2), readAt: now)
            if !isRepeat { stamps.append(stamp) }
        }
        #expect(stamps.count == 10 || stamps.count == 11, "\(stamps.count) in 1 s")
        #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $1 - $0 >= ChangeInstant.longestHold })
    }

    /// After a pause in the reads longer than 100 ms nothing says when the value changed: the read.
    @Test func aReadAfterAPauseIsStampedAtTheRead() {
        var instants = ChangeInstant()
        _ = instants.instant(of: Vector3(x: 1, y: 0, z: 0), readAt: 0)
        _ = instants.instant(of: Vector3(x: 1, y: 0, z: 0), readAt: 3_500_000)
        #expect(instants.instant(of: Vector3(x: 2, y: 0, z: 0), readAt: 1_000_000_000) == (1_000_000_000, false))
    }
}
