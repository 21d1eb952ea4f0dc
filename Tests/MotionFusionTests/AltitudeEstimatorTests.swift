import Foundation
import MotionCore
import Testing

@testable import MotionFusion

/// The altimeter's precision against noise of a known size, with and without a climb.
@Suite struct AltitudeEstimatorTests {
    /// The pressure (kPa) at geopotential altitude `h` (m) below 11 km: the standard atmosphere's
    /// barometric formula solved for p, to make readings (the altitude itself is checked against
    /// independent tables in StandardAtmosphereTests).
    static func pressure(at h: Double) -> Double { 101.325 * pow(1 - 0.0065 * h / 288.15, 1 / 0.190263) }

    /// Readings every 40 ms (25 Hz) for `seconds`, at `climb` m/s, with Gaussian noise of `sigma` m.
    static func readings(seconds: Double, climb: Double, sigma: Double) -> [(pressure: Double, timestamp: Int64)] {
        var noise = SeededNoise(seed: 42)
        return (0..<Int(seconds * 25)).map { i in
            let t = Double(i) * 0.04
            return (pressure(at: 500 + climb * t + sigma * noise.next()), Int64(i) * 40_000_000)
        }
    }

    @Test func thePrecisionIsTheNoisesStandardDeviation() throws {
        var altimeter = AltitudeEstimator()
        var last: AltitudeEstimator.Reading?
        for r in Self.readings(seconds: 60, climb: 0, sigma: 0.1) { last = altimeter.update(pressure: r.pressure, timestamp: r.timestamp) }
        let precision = try #require(last?.precision)
        #expect(abs(precision - 0.1) < 0.015, "\(precision) m for noise of 0.1 m")
        #expect(abs(try #require(last).altitude - 500) < 0.5)
    }

    /// In a lift climbing 1 m/s the readings spread over metres in 10 s, but their noise is still
    /// 0.1 m: the precision measures the noise, not the climb (at 25 Hz a 1 m/s climb adds
    /// 0.04 m / √2 per difference, √(0.1² + 0.028²) = 0.104 m).
    @Test func aSteadyClimbIsNotCountedAsNoise() throws {
        var altimeter = AltitudeEstimator()
        var last: AltitudeEstimator.Reading?
        for r in Self.readings(seconds: 60, climb: 1, sigma: 0.1) { last = altimeter.update(pressure: r.pressure, timestamp: r.timestamp) }
        let precision = try #require(last?.precision)
        #expect(precision < 0.12, "\(precision) m in a climb of 1 m/s")
        #expect(abs(try #require(last).altitude - 560) < 0.5)
    }

    @Test func noPrecisionBeforeTheThirdReadingAndNoReadingForAPressureOfZero() {
        var altimeter = AltitudeEstimator()
        #expect(altimeter.update(pressure: 0, timestamp: 0) == nil)
        #expect(altimeter.update(pressure: -3, timestamp: 0) == nil)
        #expect(altimeter.update(pressure: 100, timestamp: 0)?.precision == nil)
        #expect(altimeter.update(pressure: 100, timestamp: 40_000_000)?.precision == nil)
        #expect(altimeter.update(pressure: 100, timestamp: 80_000_000)?.precision == 0)
    }

    /// The sensor stopped for an hour (nobody watched) while the weather moved the pressure by 1 hPa:
    /// the first reading after is not compared with the last before, so the noise stays the noise.
    @Test func aHoleInTheReadingsIsNotNoise() {
        var altimeter = AltitudeEstimator()
        for i in 0..<10 { _ = altimeter.update(pressure: 95, timestamp: Int64(i) * 40_000_000) }
        let hourLater: Int64 = 3600 * 1_000_000_000
        _ = altimeter.update(pressure: 94.9, timestamp: hourLater)
        let after = altimeter.update(pressure: 94.9, timestamp: hourLater + 40_000_000)
        #expect(after?.precision == 0, "8 m of weather taken for noise: \(String(describing: after))")
    }

    /// A new sea-level pressure (a reload with the day's QNH) moves every altitude by metres at
    /// once; that jump is not noise.
    @Test func aNewSeaLevelPressureIsNotCountedAsNoise() throws {
        var altimeter = AltitudeEstimator()
        for i in 0..<10 { _ = altimeter.update(pressure: 95, timestamp: Int64(i) * 40_000_000) }
        altimeter.parameters.seaLevelPressure = 102.0
        var last: AltitudeEstimator.Reading?
        for i in 10..<20 { last = altimeter.update(pressure: 95, timestamp: Int64(i) * 40_000_000) }
        #expect(try #require(last?.precision) == 0)
        let standard = try #require(StandardAtmosphere.altitude(pressure: 95))
        #expect(try #require(last?.altitude) > standard + 50)
    }

    /// Issue 40, defect 5: a pressure no barometer measures (the data sheets' union, 26–126 kPa) is
    /// refused, whatever it is: one raw count of an lps22hb, the smallest double (5e-324), infinity.
    @Test(arguments: [0.000024414, .leastNonzeroMagnitude, 25.9, 126.1, .infinity, .nan])
    func aPressureNoBarometerMeasuresIsNoAltitudeAndChangesNothing(glitch: Double) throws {
        var altimeter = AltitudeEstimator()
        for i in 0..<10 { _ = altimeter.update(pressure: 95 + (i % 2 == 0 ? 0.001 : 0), timestamp: Int64(i) * 40_000_000) }
        #expect(altimeter.update(pressure: glitch, timestamp: 400_000_000) == nil)
        let reading = altimeter.update(pressure: 95, timestamp: 440_000_000)
        let after = try #require(reading)
        #expect(try #require(after.precision) < 0.2, "\(after)")
        #expect(after.altitude.isFinite)
    }

    /// A plausible pressure far from the last (a bit error: 50 kPa between readings of 95, some 5 km
    /// in 40 ms) is refused until three readings in a row agree with it; then it is where the sensor is.
    @Test func aJumpFasterThanAnyClimbIsRefusedUntilConfirmed() throws {
        var altimeter = AltitudeEstimator()
        for i in 0..<10 { _ = altimeter.update(pressure: 95, timestamp: Int64(i) * 40_000_000) }
        #expect(altimeter.update(pressure: 50, timestamp: 400_000_000) == nil)
        #expect(altimeter.update(pressure: 95, timestamp: 440_000_000)?.precision == 0, "the glitch is no noise")
        var run: [AltitudeEstimator.Reading?] = []
        for i: Int64 in 11...13 { run.append(altimeter.update(pressure: 50, timestamp: i * 40_000_000 + 40_000_000)) }
        #expect(run[0] == nil && run[1] == nil)
        let taken = try #require(run[2])
        #expect(abs(taken.altitude - (try #require(StandardAtmosphere.altitude(pressure: 50)))) < 1e-9)
        #expect(taken.precision == nil, "the noise starts over where the sensor is")
    }
}
