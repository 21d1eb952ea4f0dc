/// The settings that change while the daemon runs (a configuration reload applies them at once),
/// as one value: the configuration resolves them, the hub takes them. Their defaults stand here only.
public struct LiveSettings: Sendable, Hashable {
    /// Magnetic declination, degrees east of true north, for the `xTrueNorthZVertical` frame; nil:
    /// the World Magnetic Model's at `location`, or 0 where that is not known either.
    public var declination: Double?
    /// Where the device is, for the World Magnetic Model's declination (nil: not known).
    public var location: GeographicLocation?
    /// The pressure at sea level the altitude is computed for, kPa.
    public var seaLevelPressure: Double
    /// The height of the person carrying the device, m: a step is `stepLengthPerHeight` × it.
    public var height: Double

    /// No declination nor place, the standard atmosphere's 101.325 kPa, and a person of 1.70 m.
    public static let defaults = LiveSettings(declination: nil, location: nil, seaLevelPressure: StandardAtmosphere.seaLevelPressure, height: 1.70)

    /// A walking step's length as a fraction of the walker's height: the usual rule of thumb
    /// (docs/activity.md).
    public static let stepLengthPerHeight = 0.415

    /// A step's length, m.
    public var stepLength: Double { Self.stepLengthPerHeight * height }

    /// Settings of these values (degrees, a place, kPa, m).
    public init(declination: Double?, location: GeographicLocation?, seaLevelPressure: Double, height: Double) {
        (self.declination, self.location, self.seaLevelPressure, self.height) = (declination, location, seaLevelPressure, height)
    }
}
