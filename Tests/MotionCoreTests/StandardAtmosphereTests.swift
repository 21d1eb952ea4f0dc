import Testing

@testable import MotionCore

/// The altitude of a pressure against the standard atmosphere as others compute it: the ICAO Standard
/// Atmosphere's table (Doc 7488: 898.746 hPa at 1,000 m, 794.952 hPa at 2,000 m, 701.085 hPa at
/// 3,000 m, …) and, to 0.01 Pa, the `ambiance` Python package's U.S. Standard Atmosphere 1976
/// (version 1.3.1, `Atmosphere(z).pressure` at the geometric height z = rH/(r − H) of each
/// geopotential H, r = 6,356,766 m), an implementation independent of this one.
@Suite struct StandardAtmosphereTests {
    /// (geopotential altitude m, pressure Pa), from `ambiance`.
    static let table: [(altitude: Double, pascals: Double)] = [
        (-500, 107_477.48), (0, 101_325.00), (500, 95_460.84), (1_000, 89_874.56), (2_000, 79_495.20),
        (3_000, 70_108.53), (5_000, 54_019.89), (11_000, 22_632.04), (15_000, 12_044.53),
    ]

    @Test func theAltitudeOfEachTabulatedPressureIsWithinATenthOfAMetreOfTheTable() throws {
        for (altitude, pascals) in Self.table {
            let computed = try #require(StandardAtmosphere.altitude(pressure: pascals / 1000))
            #expect(abs(computed - altitude) < 0.1, "\(pascals) Pa: \(computed) m, the table \(altitude) m")
        }
    }

    /// A pressure of 0 or less has no altitude (the logarithm of it is not a number).
    @Test func noAltitudeForAPressureOfZeroOrLessOrNotFinite() {
        for pressure in [0, -1, .nan, .infinity] {
            #expect(StandardAtmosphere.altitude(pressure: pressure) == nil, "\(pressure)")
        }
        #expect(StandardAtmosphere.altitude(pressure: 100, seaLevelPressure: 0) == nil)
    }

    /// QNH: with the sea-level pressure the weather gives, the same reading is another altitude; at
    /// the sea-level pressure itself, 0 m. 1 hPa near sea level is about 8.4 m (the table: 500 m
    /// over 5,864 Pa near the ground, 8.5 m/hPa).
    @Test func theSeaLevelPressureShiftsTheAltitude() throws {
        #expect(try #require(StandardAtmosphere.altitude(pressure: 102.1, seaLevelPressure: 102.1)) == 0)
        let standard = try #require(StandardAtmosphere.altitude(pressure: 95))
        let higher = try #require(StandardAtmosphere.altitude(pressure: 95, seaLevelPressure: 101.425))
        #expect((8.0...9.0).contains(higher - standard), "\(higher - standard) m per hPa")
    }
}
