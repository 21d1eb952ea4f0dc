import MotionCore
import MotionSystem

/// Says how many readings a capture dropped as beyond what a sensor can measure: as a failed read,
/// at most once a second, so that a sensor stuck on garbage neither floods the log nor ends the
/// capture (its good readings, and its other sensors', go on).
public struct RejectionReport: Sendable {
    private let device: String
    private let kinds: [SensorKind]
    private var reported = 0
    private var lastReport: Int64?

    /// Reports for `kinds` of `device` (named once here: `report` runs at every read and formats
    /// nothing until there is something to say).
    public init(device: String, kinds: [SensorKind]) {
        self.device = device
        self.kinds = kinds
    }

    /// Reports the readings rejected since the last report, given the `total` so far, if a second has passed.
    public mutating func report(total: Int, to handler: (SensorEvent) -> Void) {
        guard total > reported else { return }
        let now = Syscall.monotonicNanoseconds()
        if let lastReport, now - lastReport < 1_000_000_000 { return }
        handler(.readFailed(.implausibleReading(device: device, kind: kinds.map(\.rawValue).joined(separator: "/"), count: total - reported)))
        reported = total
        lastReport = now
    }
}
