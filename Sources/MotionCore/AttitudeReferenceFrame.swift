/// The reference frames of an attitude, as CoreMotion names them (`CMAttitudeReferenceFrame`).
/// All have z vertical, pointing up.
public enum AttitudeReferenceFrame: String, Sendable, Hashable, Codable, CaseIterable {
    /// x arbitrary: yaw starts at 0 and, with no magnetometer, drifts slowly.
    case xArbitraryZVertical
    /// x arbitrary, but the magnetometer keeps yaw from drifting.
    case xArbitraryCorrectedZVertical
    /// x to magnetic north (the frame is North-West-Up).
    case xMagneticNorthZVertical
    /// x to true north: magnetic north turned by the configured declination.
    case xTrueNorthZVertical

    /// Whether the frame is tied to north (and a heading is defined).
    public var isNorthReferenced: Bool { self == .xMagneticNorthZVertical || self == .xTrueNorthZVertical }
}
