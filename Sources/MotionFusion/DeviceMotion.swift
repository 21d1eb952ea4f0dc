import MotionCore

/// The fused motion of the device at one instant, in CoreMotion's units and signs (`CMDeviceMotion`).
public struct DeviceMotion: Sendable, Hashable, Codable {
    /// When, integer nanoseconds of CLOCK_MONOTONIC: the timestamp of the IMU sample it belongs to
    /// (the gyroscope's, or the accelerometer's where there is no gyroscope).
    public var timestamp: Int64
    /// The frame `attitude` is relative to.
    public var referenceFrame: AttitudeReferenceFrame
    /// The device's attitude relative to `referenceFrame`.
    public var attitude: Attitude
    /// Gravity in the device frame, in g (9.80665 m/s²): (0, 0, −1) lying face up.
    public var gravity: Vector3
    /// Acceleration the user gives the device, in g: total acceleration − gravity; 0 at rest.
    public var userAcceleration: Vector3
    /// Rotation rate, rad/s, device frame, with the estimated gyroscope bias and scale errors removed.
    public var rotationRate: Vector3
    /// Magnetic field, µT, device frame, with the estimated hard-iron offset removed.
    public var magneticField: Vector3
    /// How far `magneticField` can be trusted.
    public var magneticFieldAccuracy: MagneticFieldAccuracy
    /// Compass heading of the device's top edge, degrees in [0, 360) clockwise from north (true or
    /// magnetic as `referenceFrame` says); `nil` in the arbitrary frames.
    public var heading: Double?
    /// What the machine's sensors cannot give (reported as 0 and to be ignored), with the reasons.
    public var unavailable: UnavailableOutputs = []
}
