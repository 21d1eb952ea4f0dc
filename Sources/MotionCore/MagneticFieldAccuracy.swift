/// How far the calibrated magnetic field can be trusted (CoreMotion's `CMMagneticFieldCalibrationAccuracy`).
public enum MagneticFieldAccuracy: String, Sendable, Hashable, Codable, Comparable {
    /// No calibration has been found yet.
    case uncalibrated
    /// A calibration exists, but the current field does not fit it (a magnet nearby, or it went stale).
    case low
    /// The hard-iron offset is known to within the calibrator's medium error (1 µT by default; see docs/frames.md).
    case medium
    /// The hard-iron offset is known to within the calibrator's high error (0.5 µT by default) and the field fits it.
    case high

    public static func < (a: Self, b: Self) -> Bool {
        let order: [Self] = [.uncalibrated, .low, .medium, .high]
        return order.firstIndex(of: a)! < order.firstIndex(of: b)!
    }
}
