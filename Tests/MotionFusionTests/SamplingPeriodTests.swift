import Foundation
import MotionCore
import TestSupport
import Testing

@testable import MotionFusion

/// An IMU samples on its own clock; the host's stamps jitter around those instants. The gyroscope is
/// integrated over the sensor's period, estimated from the stamps, not over each jittered difference.
@Suite struct SamplingPeriodTests {
    /// The stamp of sample `k` of a sensor with period `period` (s), late or early by up to `jitter` s.
    static func stamp(_ k: Int, period: Double, jitter: Double, generator: inout SplitMix64) -> Int64 {
        Int64(((Double(k) * period + Double.random(in: -jitter...jitter, using: &generator)) * 1e9).rounded())
    }

    @Test func jitteredStampsOfAClockOffItsNominalRateGiveItsTruePeriod() {
        // A "100 Hz" IMU whose oscillator runs 2 % slow, stamped within ±2 ms.
        let period = 1 / 98.0
        var generator = SplitMix64(seed: 1)
        var clock = SamplingPeriodEstimator(nominalPeriod: 0.01)
        var largestError = 0.0
        for k in 0..<3000 {
            let interval = clock.interval(to: Self.stamp(k, period: period, jitter: 0.002, generator: &generator))
            if k >= 300 { largestError = max(largestError, abs(interval - period) / period) }
        }
        // From 3 s on, every step within 0.1 % of the true period (a raw difference is up to ±40 % off;
        // the nominal period 2 %).
        #expect(largestError < 0.001, "\(largestError)")
    }

    /// Also says whether each sample follows the one before by one period, which the coning
    /// correction needs (it pairs a sample with the one just before).
    @Test func aLostSampleIsIntegratedOverTwoPeriodsAndASuspendOverNone() {
        // Set to 99 Hz, running at 100 Hz: after 2 s the period is the stamps' 10 ms.
        var clock = SamplingPeriodEstimator(nominalPeriod: 0.0101)
        _ = clock.interval(to: 0)
        #expect(clock.followsLastSample == false)
        for k in 1..<200 { _ = clock.interval(to: Int64(k) * 10_000_000) }
        #expect(clock.followsLastSample)
        // Sample 200 lost in a FIFO overrun: the next step spans two periods.
        #expect(abs(clock.interval(to: 201 * 10_000_000) - 0.02) < 1e-9)
        #expect(clock.followsLastSample == false)
        #expect(abs(clock.period - 0.01) < 1e-9)
        // A 10 s suspend: the rate during it is unknown, so one period is integrated, not 10 s.
        #expect(abs(clock.interval(to: 10_201 * 10_000_000) - 0.01) < 1e-9)
        #expect(clock.followsLastSample == false)
        #expect(abs(clock.interval(to: 10_202 * 10_000_000) - 0.01) < 1e-9)
        #expect(clock.followsLastSample)
    }

    /// A device shaken about the vertical, its rate swinging ±300 °/s at 2 Hz, gyroscope at 100 Hz with
    /// stamps jittered ±2 ms. The reference is the turn the samples measured, each over the sensor's
    /// own period: Σ rate·T. Integrating over the stamps' differences adds Σ jitter·Δrate, a random
    /// walk of about 1.5° in 10 s.
    @Test func aGyroscopeWithJitteredStampsIntegratesTheTurnItMeasured() {
        let period = 0.01
        var generator = SplitMix64(seed: 7)
        var filter = OrientationFilter(gyroscopeRate: 100)
        var measured = 0.0
        var overStampDifferences = 0.0
        var lastStamp: Int64?
        for k in 0..<1000 {
            let rate = 300 * .pi / 180 * sin(2 * .pi * 2 * Double(k) * period)
            let t = Self.stamp(k, period: period, jitter: 0.002, generator: &generator)
            filter.update(gyroscope: Vector3(x: 0, y: 0, z: rate), timestamp: t)
            filter.update(accelerometer: Vector3(x: 0, y: 0, z: 9.81), timestamp: t)
            measured += rate * period
            overStampDifferences += rate * (lastStamp.map { Double(t - $0) * 1e-9 } ?? period)
            lastStamp = t
        }
        let expected = Quaternion(w: cos(measured / 2), x: 0, y: 0, z: sin(measured / 2))
        let error = filter.attitudeWithoutMagnetometer.angle(to: expected) * 180 / .pi
        let stampError = abs(overStampDifferences - measured) * 180 / .pi
        #expect(error < 0.02, "\(error)° off the measured turn")
        // The case is one where the stamps' differences would have cost more than that.
        #expect(stampError > 0.5, "\(stampError)°")
    }
}
