/// Why a capture was closed and its device opened again while the device stayed (issue 62): STATUS's
/// `recoveries`, and the metrics' `motiond_sensor_recoveries_total{device,reason}`.
public enum RecoveryReason: String, Sendable, CaseIterable, Codable {
    /// The machine woke from sleep: every capture is re-armed as at start, since a driver may have
    /// forgotten its chip's state across the suspend (sleep-and-recovery.md).
    case resume
    /// A buffer that had given scans gave none for a check interval while its device was there, and
    /// no rest explains it.
    case silence
    /// `CapturePolicy.failuresThatEnd` reads in a row failed while the device was there.
    case failingReads = "failing-reads"
}

/// When a capture that keeps failing is re-armed again: at once the first time (a driver that
/// forgot its state reads again within the time an opening takes), then after 1, 2, 4, … seconds, at
/// most `longest`, until it reads again: a dead sensor costs one opening a minute, never a busy loop.
public enum RecoveryBackoff {
    /// The longest wait between two re-arms, s.
    public static let longest = 60.0

    /// Seconds to wait before re-arm number `attempt` (1 for the first since the sensor last read).
    public static func delay(beforeAttempt attempt: Int) -> Double {
        guard attempt > 1 else { return 0 }
        return min(longest, Double(1 << min(attempt - 2, 16)))
    }
}
