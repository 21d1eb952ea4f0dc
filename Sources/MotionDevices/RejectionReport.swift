import MotionCore
import MotionSystem

/// Says how many readings a capture dropped as beyond what a sensor can measure: as a failed read,
/// at most once a second, so that a sensor stuck on garbage neither floods the log nor ends the
/// capture (its good readings, and its other sensors', go on).
public struct RejectionReport: Sendable {
    private var reported = 0
    private var lastReport: Int64?

    /// Nothing reported yet.
    public init() {}

    /// Reports the readings rejected since the last report, given the `total` so far, if a second has passed.
    public mutating func report(total: Int, device: String, kinds: [SensorKind], to handler: (SensorEvent) -> Void) {
        guard total > reported else { return }
        let now = Syscall.monotonicNanoseconds()
        if let lastReport, now - lastReport < 1_000_000_000 { return }
        handler(.readFailed(.implausibleReading(device: device, kind: kinds.map(\.rawValue).joined(separator: "/"), count: total - reported)))
        reported = total
        lastReport = now
    }
}
