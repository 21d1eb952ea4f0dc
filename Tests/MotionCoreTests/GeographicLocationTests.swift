import Testing

@testable import MotionCore

/// `location`'s text (motiond.conf, `motiond --location`, `motionctl fuse --location`): decimal
/// degrees as people write them, `latitude, longitude[, altitude]`, nothing else (issue 60, 14e: an
/// empty field was skipped and a hexadecimal float taken).
@Suite struct GeographicLocationTests {
    /// Two or three decimal numbers, spaces about the commas allowed, a sign allowed.
    @Test(arguments: [
        ("52.52, 13.40", 52.52, 13.40, 0.0),
        ("-33.9,151.2,58", -33.9, 151.2, 58.0),
        (" 52.52 ,13.40 , 34 ", 52.52, 13.40, 34.0),
        ("+10, -20.5, -12.25", 10, -20.5, -12.25),
        ("-90, 180", -90, 180, 0),
        ("0.5,.5,7.", 0.5, 0.5, 7),
    ])
    func aPlaceInDecimalDegreesIsRead(text: String, latitude: Double, longitude: Double, altitude: Double) throws {
        let place = try #require(GeographicLocation(parsing: text), "\"\(text)\"")
        #expect(place == GeographicLocation(latitude: latitude, longitude: longitude, altitude: altitude), "\"\(text)\": \(place)")
    }

    /// An empty field, a number in another notation (hexadecimal, exponent, nan, inf), a field
    /// too many or too few, a stray character, or a coordinate out of its range: no place.
    @Test(arguments: [
        "52.52,,13.40", ",52.52,13.40", "52.52,13.40,", "52.52, 13.40, ", "0x1p4, 13.40", "52.52, 0x1p4", "52.52, 13.40, 0x10",
        "5.252e1, 13.40", "nan, 13.40", "52.52, inf", "52.52", "52.52, 13.40, 34, 1", "", " ", "52.52 13.40", "52.52;13.40",
        "52,52, 13,40", "--5, 1", "+-5, 1", "5-, 1", ".,1", "1.2.3, 4", "52.52°, 13.40", "91, 0", "0, -180.5", "0, 0, -1001", "0, 0, 100001",
        "٥٢, 13",
    ])
    func anythingElseIsRefused(text: String) {
        #expect(GeographicLocation(parsing: text) == nil, "\"\(text)\" read as \(String(describing: GeographicLocation(parsing: text)))")
    }
}
