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

    /// Whether samples of this kind carry three axes (`false` for proximity, a scalar).
    public var isVector: Bool { self != .proximity }
}
