import MotionCore

/// Chooses which samples of a stream a client gets, on the samples' own timestamps.
///
/// Samples are due every `interval`; the first sample within half a sensor period of a due time (or
/// after it) is sent. So a client gets its interval exactly on average (35 ms from a 100 Hz sensor:
/// gaps of 30 and 40 ms), every sample when it asks for the sensor's period despite timestamp jitter,
/// and no burst after a gap in the data (the schedule restarts). A sample older than one already
/// sent is never sent.
struct StreamDecimator: Sendable, Hashable {
    /// The client's interval, ns.
    let interval: Int64
    /// How far back a timestamp must jump to count as a reset sensor clock rather than a stale sample, ns.
    static let clockReset: Int64 = 1_000_000_000
    private var due: Int64?
    private var lastSent: Int64 = .min

    /// A decimator for `interval` seconds.
    init(interval: Double) {
        self.interval = Int64((interval * 1e9).rounded())
    }

    /// Whether the sample taken at `timestamp` (ns) goes to the client; `sensorPeriod` in ns. The
    /// timestamp is a device's, any Int64: the schedule saturates (`saturatingAdvanced`), never traps.
    mutating func accepts(_ timestamp: Int64, sensorPeriod: Int64) -> Bool {
        let slack = sensorPeriod / 2
        guard let due else {
            restart(at: timestamp)
            return true
        }
        if timestamp < lastSent {
            // Older than what the client has (a sample in flight from a capture reopened meanwhile):
            // never sent. Far older: the sensor's clock was reset; a new schedule starts.
            guard lastSent.nanoseconds(since: timestamp) > Self.clockReset else { return false }
            restart(at: timestamp)
            return true
        }
        guard timestamp >= due.saturatingAdvanced(by: -slack) else { return false }
        lastSent = timestamp
        self.due = due.saturatingAdvanced(by: interval)
        // After a gap in the data, start again from here rather than catch up in a burst.
        if self.due! < timestamp.saturatingAdvanced(by: -slack) { self.due = timestamp.saturatingAdvanced(by: interval) }
        return true
    }

    private mutating func restart(at timestamp: Int64) {
        lastSent = timestamp
        due = timestamp.saturatingAdvanced(by: interval)
    }
}
