import Testing

@testable import MotionHub

/// The rate a polled magnetometer truly measures at, from its measurements' instants.
@Suite struct MeasurementRateTests {
    /// Feeds `instants` (ns); the first rate told.
    static func rate(of instants: some Sequence<Int64>) -> Double? {
        var meter = MeasurementRate()
        for t in instants { if let rate = meter.add(t) { return rate } }
        return nil
    }

    @Test func measurementsEvery10msAre100Hz() {
        let rate = Self.rate(of: stride(from: Int64(5_000_000), through: 3_000_000_000, by: 10_000_000))
        #expect(rate.map { abs($0 - 100) < 1e-9 } == true, "\(rate.map { "\($0)" } ?? "none")")
    }

    /// A value held still is re-sent every 0.1 s (`ChangeInstant.longestHold`): no rate is told from
    /// it (it would be 10 Hz, and the fusion would take 100 Hz measurements for 10 Hz ones later).
    @Test func aValueHeldStillTellsNoRate() {
        #expect(Self.rate(of: stride(from: Int64(0), through: 10_000_000_000, by: 100_000_000)) == nil)
    }

    /// Instants a device's clock could give, as far apart as an Int64 holds (a clock that jumped, or
    /// garbage in a buffer's timestamp): a hole, not a trap subtracting them (it took the daemon down).
    @Test func instantsFurtherApartThanAnIntervalHoldsAreAHole() {
        #expect(Self.rate(of: [Int64.min + 1, Int64.max, Int64.max - 1]) == nil)
        var meter = MeasurementRate()
        _ = meter.add(-9_000_000_000_000_000_000)
        let afterJump = stride(from: Int64(9_000_000_000_000_000_000), through: 9_000_000_003_000_000_000, by: 10_000_000)
        let rate = afterJump.lazy.compactMap { meter.add($0) }.first
        #expect(rate.map { abs($0 - 100) < 1e-9 } == true, "\(rate.map { "\($0)" } ?? "none")")
    }

    /// A hole in the readings (the sensor stopped for a second) starts the count again: the rate is
    /// that of the measurements after it, not one diluted by the hole.
    @Test func aHoleStartsTheCountAgain() {
        let before = stride(from: Int64(0), through: 1_500_000_000, by: 10_000_000)
        let after = stride(from: Int64(2_500_000_000), through: 6_000_000_000, by: 20_000_000)
        let rate = Self.rate(of: Array(before) + Array(after))
        #expect(rate.map { abs($0 - 50) < 1e-9 } == true, "\(rate.map { "\($0)" } ?? "none")")
    }
}
