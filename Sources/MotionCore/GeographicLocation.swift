/// A place on the Earth: WGS-84 latitude and longitude, and the height above the ellipsoid.
public struct GeographicLocation: Sendable, Hashable, Codable {
    /// Degrees north, −90 to 90.
    public var latitude: Double
    /// Degrees east, −180 to 180.
    public var longitude: Double
    /// Metres above the WGS-84 ellipsoid (near enough, above sea level).
    public var altitude: Double

    /// The altitudes taken, m: from below the Dead Sea's shore (−430 m) with room to spare, to the
    /// edge of space (the World Magnetic Model's own limit is 850 km, but no device reports from there).
    public static let plausibleAltitudes: ClosedRange<Double> = -1000...100_000

    /// A place of these coordinates (degrees, degrees, m); nil where one is outside its range or not finite.
    public init?(latitude: Double, longitude: Double, altitude: Double = 0) {
        guard (-90...90).contains(latitude), (-180...180).contains(longitude), Self.plausibleAltitudes.contains(altitude) else { return nil }
        (self.latitude, self.longitude, self.altitude) = (latitude, longitude, altitude)
    }

    /// A place written `latitude, longitude` or `latitude, longitude, altitude` (degrees, degrees,
    /// metres: `52.52, 13.40, 34`): exactly two or three fields, each a decimal number (an optional
    /// sign, ASCII digits, at most one point; spaces around it), in range; nil for anything else (an
    /// empty field, a hexadecimal float, an exponent, `nan`, `inf`).
    public init?(parsing text: String) {
        let fields = text.split(separator: ",", omittingEmptySubsequences: false).map { Self.decimal($0) }
        guard fields.count == 2 || fields.count == 3, let latitude = fields[0], let longitude = fields[1] else { return nil }
        let altitude = fields.count == 3 ? fields[2] : 0
        guard let altitude else { return nil }
        self.init(latitude: latitude, longitude: longitude, altitude: altitude)
    }

    /// `field` as a decimal number: `[+-]?(digits[.digits*] | .digits)` between spaces, else nil.
    /// Checked before `Double`'s parser, which also takes hexadecimal, exponents, `nan` and `inf`.
    private static func decimal(_ field: Substring) -> Double? {
        let number = field.utf8.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }.reversed()
            .drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }.reversed()
        var rest = number[...]
        if let sign = rest.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { rest = rest.dropFirst() }
        let isDigit = { (byte: UInt8) in (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
        let whole = rest.prefix(while: isDigit)
        rest = rest.dropFirst(whole.count)
        var fraction = rest.prefix(0)
        if rest.first == UInt8(ascii: ".") {
            fraction = rest.dropFirst().prefix(while: isDigit)
            rest = rest.dropFirst(1 + fraction.count)
        }
        guard rest.isEmpty, !whole.isEmpty || !fraction.isEmpty else { return nil }
        return Double(String(decoding: number, as: UTF8.self))
    }
}
