import MotionCore

/// When a polled value was taken by its sensor, for a sensor that measures at its own rate and holds
/// the value between measurements (a magnetometer in continuous mode): a reading equal to the previous
/// one is that measurement read again, not a new one (a repeat, stamped at the read); where reads come
/// faster than the sensor's measurements (repeats show it), a reading that differs was taken between
/// the previous read and this one: halfway, on average, the estimate with the least error for a change
/// that may come at any moment of the interval. Where every read differs, the sensor may measure faster than it is read
/// and the value be fresh: it is stamped at the read, as before.
///
/// Stamped at the read, a polled magnetometer's sample was late by up to a poll period and its
/// repeats later still (up to its own period: 10 ms at 100 Hz); in a turn of some hundred degrees a
/// second each millisecond misplaced the heading by a tenth of a degree or more.
public struct ChangeInstant {
    /// The longest a value may hold before it counts as a new measurement again, ns: a sensor whose
    /// value truly holds still (a field quantised to the same counts) still feeds the fusion 10 times
    /// a second. A read after a longer pause than this says nothing of when its value changed:
    /// stamped at the read.
    public static let longestHold: Int64 = 100_000_000
    /// Reads since the last repeat within which the reads still count as faster than the sensor.
    static let repeatEvidence = 8

    private var previous: Vector3?
    private var previousRead: Int64 = 0
    private var lastStamp: Int64 = 0
    private var lastMeasurement: Int64 = 0
    /// Reads since the last repeat, counted up to one past `repeatEvidence` (none seen yet: that).
    private var readsSinceRepeat = repeatEvidence + 1

    /// The instant (ns) to stamp the counts `raw`, read at `now`, with, and whether they are the
    /// previous measurement read again.
    mutating func instant(of raw: Vector3, readAt now: Int64) -> (timestamp: Int64, isRepeat: Bool) {
        defer { (previous, previousRead) = (raw, now) }
        let sinceRead = now - previousRead
        guard let previous, sinceRead > 0, sinceRead <= Self.longestHold else {
            lastStamp = now
            lastMeasurement = now
            return (now, false)
        }
        if raw == previous {
            readsSinceRepeat = 0
            lastStamp = max(now, lastStamp + 1)
            guard now - lastMeasurement >= Self.longestHold else { return (lastStamp, true) }
            lastMeasurement = now
            return (lastStamp, false)
        }
        readsSinceRepeat = min(readsSinceRepeat + 1, Self.repeatEvidence + 1)
        let halfway = readsSinceRepeat <= Self.repeatEvidence ? previousRead + sinceRead / 2 : now
        // Never before a sample already stamped: the samples of a sensor stay in order.
        lastStamp = max(halfway, lastStamp + 1)
        lastMeasurement = lastStamp
        return (lastStamp, false)
    }
}
