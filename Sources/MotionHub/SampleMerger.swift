import MotionCore
import MotionDevices

/// Puts the samples of several captures into one time order before they are fused.
///
/// Each capture delivers its own samples in order, but not in step with the others: an IIO buffer
/// hands its scans over some milliseconds after their timestamps, while a polled magnetometer is
/// stamped when it is read, so it arrives ahead of IMU samples older than it. The samples of the
/// capture that paces the motion output (the gyroscope's, or the accelerometer's without one) go
/// through at once; the others are held until a paced sample at or after their time arrives, and
/// are then released, in time order, just before it.
///
/// A held sample waits until a sample held after it is `maximumHold` newer, and at most `capacity`
/// samples are held: a pace that stalls, or runs on another clock, delays the others by a bounded
/// amount and never drops one.
struct SampleMerger {
    /// A sample on hold, with the interval to report with it.
    struct Entry {
        var sample: SensorSample
        var period: Int64
    }

    /// The capture whose samples pace the fusion; `nil` lets every sample through at once.
    var pace: DeviceNumber?
    let capacity: Int
    /// How much newer a sample arriving on hold may be than the oldest held before that one goes, ns.
    let maximumHold: Int64
    /// Held samples, in time order (ties in arrival order). Reserved once, never grown past `capacity`.
    private var held: [(entry: Entry, device: DeviceNumber)] = []

    init(capacity: Int = 64, maximumHold: Int64 = 100_000_000) {
        precondition(capacity > 0)
        self.capacity = capacity
        self.maximumHold = maximumHold
        held.reserveCapacity(capacity + 1)
    }

    var heldCount: Int { held.count }

    /// Takes `entry`, a sample of `device`, and appends to `ready` what may now be fused, in order.
    mutating func add(_ entry: Entry, from device: DeviceNumber, into ready: inout [Entry]) {
        let t = entry.sample.timestamp
        guard let pace, device != pace else {
            release(count: held.firstIndex { $0.entry.sample.timestamp > t } ?? held.count, into: &ready)
            ready.append(entry)
            return
        }
        let index = held.firstIndex { $0.entry.sample.timestamp > t } ?? held.count
        held.insert((entry, device), at: index)
        // A device's timestamp may be any Int64: saturated, not trapping, near Int64.min.
        let oldestKept = t.saturatingAdvanced(by: -maximumHold)
        var due = max(0, held.count - capacity)
        while due < held.count, held[due].entry.sample.timestamp < oldestKept { due += 1 }
        release(count: due, into: &ready)
    }

    /// Appends every held sample to `ready`, in order (the pace is gone or changed).
    mutating func releaseAll(into ready: inout [Entry]) {
        release(count: held.count, into: &ready)
    }

    /// Releases the `count` oldest held samples.
    private mutating func release(count: Int, into ready: inout [Entry]) {
        guard count > 0 else { return }
        for i in 0..<count { ready.append(held[i].entry) }
        held.removeFirst(count)
    }
}
