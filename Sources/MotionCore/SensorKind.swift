/// The kinds of motion sensor motiond reads.
public enum SensorKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// Specific force in m/s² (+9.81 on the up axis at rest, as IIO and Android report it).
    case accelerometer
    /// Angular velocity in rad/s, right-handed about each device axis.
    case gyroscope
    /// Magnetic flux density in µT.
    case magnetometer
    /// Proximity: a dimensionless raw reading (larger is nearer) and a near/far state.
    case proximity
    /// Ambient light: illuminance in lux, or the raw reading where the driver gives no scale.
    case light
    /// Air pressure in kPa (the IIO ABI's unit and CoreMotion's), for the altimeter.
    case pressure
    /// A sensor hub's own compass: its tilt-compensated heading, degrees clockwise from magnetic north.
    case compass

    /// The kind's place in `allCases`, for tables indexed by kind.
    public var index: Int {
        switch self {
        case .accelerometer: 0
        case .gyroscope: 1
        case .magnetometer: 2
        case .proximity: 3
        case .light: 4
        case .pressure: 5
        case .compass: 6
        }
    }

    /// Whether samples of this kind carry three axes (`false` for proximity, light, pressure and
    /// compass, scalars).
    public var isVector: Bool { self != .proximity && self != .light && self != .pressure && self != .compass }

    /// The largest magnitude a real sensor of this kind reports, in its SI unit (m/s², rad/s, µT):
    /// above it a reading is a glitch (a bus error, a garbage register) and is dropped. Set well
    /// beyond the widest ranges in use: ±200 g accelerometers, ±4000 °/s gyroscopes, magnetometers
    /// that saturate near 5 mT; light far beyond sunlight (1.2e5 lux) and any 32-bit raw count (its
    /// unit may be the vendor's); pressure far beyond deep-water gauges (10 MPa; a pressure must
    /// also be above 0); a compass heading within one turn. Proximity is not bounded.
    public var plausibleMagnitude: Double {
        switch self {
        case .accelerometer: 2500
        case .gyroscope: 100
        case .magnetometer: 10_000
        case .light: 1e12
        case .pressure: 10_000
        case .compass: 360
        case .proximity: .infinity
        }
    }
}
