/// The sampling rates motiond takes from a device, and the conversion of a rate to the period a
/// timer or a wait takes: a rate no chip runs at (a broken driver's, or another machine's iiod's
/// `1e-10` or `1e308`) neither traps a conversion nor stalls a capture.
public enum PlausibleRate {
    /// The rates a device may say it runs at, Hz. IIO gives `sampling_frequency` and its
    /// `_available` list in Hz (Documentation/ABI/testing/sysfs-bus-iio); motion chips run from
    /// ADXL345's slowest data rate (0.10 Hz in its data sheet, 3200 Hz / 2^15, which Linux's
    /// adxl345 driver lists as `0.097000`: `adxl345_odr_tbl`) to 32 kHz (ICM-42688's fastest). From
    /// that slowest (a period of 10.3 s: a rate below it is one a stream would wait minutes on) to
    /// about three times the fastest (10 µs, as often as a poller or a timer can keep).
    public static let hertz: ClosedRange<Double> = 0.097...100_000

    /// `rate` brought into `hertz`, Hz (not a number: the lowest).
    public static func clamped(_ rate: Double) -> Double {
        rate.isNaN ? hertz.lowerBound : min(max(rate, hertz.lowerBound), hertz.upperBound)
    }

    /// The period of `rate` Hz brought into `hertz`, ns: 10 µs to 10.3 s.
    public static func period(_ rate: Double) -> Int64 {
        Int64((1e9 / clamped(rate)).rounded())
    }
}

extension FixedWidthInteger {
    /// `value` rounded toward zero, or the nearest the type holds where it holds no such integer
    /// (beyond its range, infinite; not a number: 0), where `init(_:)` would trap.
    public init(saturating value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= Double(Self.max) {
            // Double(Self.max) rounds up to a power of two for 64 bits: every value below it fits.
            self = .max
        } else if value <= Double(Self.min) {
            self = .min
        } else {
            self.init(value)
        }
    }
}
