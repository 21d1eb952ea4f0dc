import MotionCore
import MotionDevices
import MotionSystem
import MotionWire

/// The sensors' recoveries and the machine's sleeps, counted for STATUS and the metrics, and a sleep
/// seen without logind: CLOCK_BOOTTIME runs on while the machine sleeps and CLOCK_MONOTONIC does not,
/// so their difference grows by each sleep (sleep-and-recovery.md). Confined to the hub's loop.
struct SensorRecoveries {
    /// A growth of the clocks' difference below this is no sleep, ns: the two clocks are read one
    /// after the other, and NTP slews neither.
    static let sleepThreshold: Int64 = 1_000_000_000

    /// Re-arms by device and reason, since start.
    private(set) var counts: [DeviceNumber: [RecoveryReason: Int]] = [:]
    /// Sleeps seen since start (logind's, or the clocks').
    private(set) var sleeps = 0
    /// CLOCK_BOOTTIME − CLOCK_MONOTONIC now, ns (a test's own clocks in a test).
    private let clocksApart: @Sendable () -> Int64
    /// `clocksApart` at the last look, ns.
    private var slept: Int64

    /// Counts from zero; `clocksApart`: how far the boot clock runs ahead of the monotonic one, ns.
    init(clocksApart: @escaping @Sendable () -> Int64 = { Syscall.boottimeNanoseconds() - Syscall.monotonicNanoseconds() }) {
        self.clocksApart = clocksApart
        slept = clocksApart()
    }

    mutating func count(_ reason: RecoveryReason, of device: DeviceNumber) {
        counts[device, default: [:]][reason, default: 0] += 1
    }

    /// A sleep logind announced: counted, and the clocks' difference taken afresh at its end (`woke`).
    mutating func sleeping() { sleeps += 1 }

    /// The machine woke: what the clocks say it slept is known, not to be found again.
    mutating func woke() { slept = clocksApart() }

    /// Whether the machine slept since the last look without anyone saying so (no logind): the
    /// clocks' difference grew by more than `sleepThreshold`. Counted as a sleep.
    mutating func sleptUnannounced() -> Bool {
        let apart = clocksApart()
        guard apart - slept > Self.sleepThreshold else { return false }
        slept = apart
        sleeps += 1
        return true
    }

    /// STATUS's `recoveries`: nil while there are none.
    var status: [StatusReply.Recovery]? {
        let all = counts.sorted { $0.key < $1.key }.flatMap { device, reasons in
            RecoveryReason.allCases.compactMap { reason in
                reasons[reason].map { StatusReply.Recovery(device: device.sysname, reason: reason.rawValue, count: $0) }
            }
        }
        return all.isEmpty ? nil : all
    }
}
