import MotionCore
import MotionFusion
import Testing

@testable import MotionHub

/// The place and its magnetic field, driven directly with a clock the test sets.
@Suite struct MagneticPlaceTests {
    /// A place's field is computed when the place is set, and again once 30 days have passed (the
    /// hub asks at each periodic save), for the date then: a fusion that runs for months follows the
    /// field's drift. The model is checked against NOAA's test values in WorldMagneticModelTests.
    @Test func thePlacesFieldIsComputedAgainOnceAMonthHasPassed() throws {
        final class Clock: @unchecked Sendable { var now = 1_790_000_000.0 }  // 2026-09-21
        let clock = Clock()
        var place = MagneticPlace(unixTime: { clock.now })
        let capeTown = try #require(GeographicLocation(latitude: -33.9, longitude: 18.4))  // Cape Town: the field drifts fast there
        func model(at time: Double) -> Double {
            WorldMagneticModel.wmm2025.field(latitude: capeTown.latitude, longitude: capeTown.longitude, altitude: 0, decimalYear: WorldMagneticModel.decimalYear(unixTime: time)).declination
        }
        place.setting = (nil, capeTown)
        let first = clock.now
        #expect(place.field?.declination == model(at: first))
        clock.now += 29 * 86_400
        place.refresh()
        #expect(place.field?.declination == model(at: first), "not yet a month")
        clock.now += 2 * 86_400
        place.refresh()
        #expect(place.field?.declination == model(at: clock.now))
        #expect(model(at: clock.now) != model(at: first), "the month moved the model's declination")
    }
}
