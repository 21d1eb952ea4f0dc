import MotionCore

/// Whether an HID sensor hub honours its accelerometer's change sensitivity (`in_accel_hysteresis`):
/// a hub written to Microsoft's sensor rules sends no report while the value stays within it, so a
/// screen lying still costs no wake-up at all; whether a given hub does under Linux is documented
/// nowhere (rotation-and-posture.md), so it is measured: the reports at rest are counted for a
/// `phase` with the sensitivity at 0, then for one with it raised to `sensitivity`. Honoured when the
/// raised rate is at most a tenth of the other. A move during a phase starts that phase again: only
/// reports at rest count.
public struct HysteresisTrial: Sendable, Equatable {
    /// The sensitivity to raise it to, m/s² (the attribute's unit after scale and offset,
    /// sysfs-bus-iio): 0.02 g, Microsoft's recommended accelerometer sensitivity, a tilt of about 1°.
    public static let sensitivity = 0.02 * Units.standardGravity
    /// Seconds each rate is counted over.
    public var phase = 2.0
    /// A change between two reports that counts as a move, m/s² (`AdaptivePolling`'s 0.1 g).
    public var moveThreshold = 0.1 * Units.standardGravity

    /// What the owner is to do next.
    public enum Step: Sendable, Equatable {
        /// Ask again at `t` ns (the current phase ends then).
        case wait(until: Int64)
        /// Raise the sensitivity to `sensitivity` now, then ask again at `t` ns.
        case raise(thenWaitUntil: Int64)
        /// The trial is over: reports a second at rest `before` and `after` raising it.
        case verdict(honoured: Bool, before: Double, after: Double)
    }

    private var phaseStart: Int64
    private var raised = false
    private var reports = 0
    private var before: Double?
    private var last: Vector3?

    /// A trial whose first phase starts at `t` ns, with the sensitivity at 0.
    public init(startingAt t: Int64) { phaseStart = t }

    /// Whether the sensitivity has been raised (the owner puts it back if the hub ignores it).
    public var isRaised: Bool { raised }

    /// The instant the current phase ends, ns.
    public var phaseEnd: Int64 { phaseStart + Int64(phase * 1e9) }

    /// A report came at `t` ns with `reading` (specific force, m/s²); a move starts the phase again.
    public mutating func report(_ reading: Vector3, at t: Int64) {
        defer { last = reading }
        if let last, (last - reading).length > moveThreshold {
            (phaseStart, reports) = (t, 0)
        } else {
            reports += 1
        }
    }

    /// What to do at `t` ns.
    public mutating func step(at t: Int64) -> Step {
        guard t >= phaseEnd else { return .wait(until: phaseEnd) }
        let rate = Double(reports) / phase
        guard let before else {
            self.before = rate
            (raised, phaseStart, reports) = (true, t, 0)
            return .raise(thenWaitUntil: phaseEnd)
        }
        return .verdict(honoured: rate <= before / 10, before: before, after: rate)
    }
}
