import MotionDevices

/// The rate a sensor truly measures at, from the instants of its new measurements: a polled
/// magnetometer measures at its own rate, whatever it is read at, and the fusion's heading path needs
/// that rate (`SensorFusion.setMagnetometerRate`).
///
/// Counted over `window` of measurements that come without a pause: an interval of
/// `ChangeInstant.longestHold` or more is a value held still (a field quantised to the same counts,
/// re-sent every 0.1 s) or a hole in the readings, and says nothing of the rate, so counting starts
/// again after it. Otherwise a device at rest for its first seconds would be measured at 10 Hz.
struct MeasurementRate {
    /// How long the measurements are counted, ns.
    let window: Int64
    private var first: Int64?
    private var last: Int64 = 0
    private var count = 0

    init(window: Int64 = 2_000_000_000) {
        self.window = window
    }

    /// Counts a measurement at `timestamp` (ns); once `window` of them came without a pause, their
    /// rate, Hz (then counting starts again).
    mutating func add(_ timestamp: Int64) -> Double? {
        // A device's instants can be anything: a difference too large for an Int64 is a hole.
        let (gap, jumped) = timestamp.subtractingReportingOverflow(last)
        guard let first, !jumped, gap > 0, gap < ChangeInstant.longestHold else {
            (first, last, count) = (timestamp, timestamp, 1)
            return nil
        }
        (last, count) = (timestamp, count + 1)
        // Each gap since `first` was short and positive: this difference holds.
        let counted = timestamp - first
        guard counted >= window else { return nil }
        defer { self.first = nil }
        return Double(count - 1) / (Double(counted) * 1e-9)
    }
}
