/// A place on the Earth: WGS-84 latitude and longitude, and the height above the ellipsoid.
public struct GeographicLocation: Sendable, Hashable, Codable {
    /// Degrees north, −90 to 90.
    public var latitude: Double
    /// Degrees east, −180 to 180.
    public var longitude: Double
    /// Metres above the WGS-84 ellipsoid (near enough, above sea level).
    public var altitude: Double

    /// A place of these coordinates (degrees, degrees, m); nil where one is outside its range or not finite.
    public init?(latitude: Double, longitude: Double, altitude: Double = 0) {
        guard (-90...90).contains(latitude), (-180...180).contains(longitude), (-1000...100_000).contains(altitude) else { return nil }
        (self.latitude, self.longitude, self.altitude) = (latitude, longitude, altitude)
    }

    /// A place written `latitude, longitude` or `latitude, longitude, altitude` (degrees, degrees,
    /// metres: `52.52, 13.40, 34`); nil for anything else.
    public init?(parsing text: String) {
        let parts = text.split(separator: ",").map { Double($0.trimmingPrefixAndSuffix(while: \.isWhitespace)) }
        guard parts.count == 2 || parts.count == 3, let latitude = parts[0], let longitude = parts[1] else { return nil }
        let altitude = parts.count == 3 ? parts[2] : 0
        guard let altitude else { return nil }
        self.init(latitude: latitude, longitude: longitude, altitude: altitude)
    }
}

extension Substring {
    fileprivate func trimmingPrefixAndSuffix(while predicate: (Character) -> Bool) -> Substring {
        var s = self
        while let first = s.first, predicate(first) { s.removeFirst() }
        while let last = s.last, predicate(last) { s.removeLast() }
        return s
    }
}
