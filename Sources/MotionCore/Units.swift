/// Physical constants and unit conversions used across motiond.
public enum Units {
    /// Standard gravity, m/s² per g (CoreMotion's acceleration unit).
    public static let standardGravity = 9.80665
    /// µT per gauss: IIO reports magnetic fields in gauss, motiond in µT.
    public static let microteslaPerGauss = 100.0
    /// Nanoseconds per second.
    public static let nanosecondsPerSecond: Int64 = 1_000_000_000
}
