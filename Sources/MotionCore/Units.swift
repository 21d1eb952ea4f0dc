/// Physical constants and unit conversions used across motiond.
public enum Units {
    /// Standard gravity, m/s² per g (CoreMotion's acceleration unit).
    public static let standardGravity = 9.80665
    /// µT per gauss: IIO reports magnetic fields in gauss, motiond in µT.
    public static let microteslaPerGauss = 100.0
    /// Nanoseconds per second.
    public static let nanosecondsPerSecond: Int64 = 1_000_000_000

    /// `seconds` as whole nanoseconds; `nil` where they do not fit an Int64 (beyond ±292 years, or not
    /// finite): a time read from a file is checked here rather than trapping in the conversion.
    public static func nanoseconds(fromSeconds seconds: Double) -> Int64? {
        Int64(exactly: (seconds * 1e9).rounded())
    }

    /// An angle in degrees as the same direction within one turn, [0, 360): −10 is 350, 360 is 0, and
    /// −1e-14, which adding a turn rounds to 360, is 0.
    public static func degreesWithinOneTurn(_ degrees: Double) -> Double {
        let remainder = degrees.truncatingRemainder(dividingBy: 360)
        let wrapped = remainder < 0 ? remainder + 360 : remainder
        return wrapped >= 360 ? 0 : wrapped
    }
}

extension Vector3 {
    /// This specific force (IIO's and the device layer's accelerometer reading, m/s², +1 g up at
    /// rest) as CoreMotion's acceleration (g, −1 g along up at rest): the one place the two meet.
    public var accelerationFromSpecificForce: Vector3 { self * (-1 / Units.standardGravity) }

    /// This CoreMotion acceleration (g) as the specific force it came from, m/s²: the inverse of
    /// `accelerationFromSpecificForce`.
    public var specificForceFromAcceleration: Vector3 { self * -Units.standardGravity }
}
