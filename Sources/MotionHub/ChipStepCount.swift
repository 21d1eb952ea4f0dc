/// The chip's own step counter, reconciled with the step history: each reading of the counter
/// (`in_steps_input`) gives the steps taken since the one before, whatever happened to the counter
/// between them. Kept in the saved history, so that the steps the chip counted while the daemon was
/// stopped are added at the next start.
///
/// The kernel's ABI says the count is "the number of steps taken by the user since the last reboot
/// while activated" (Documentation/ABI/testing/sysfs-bus-iio:1722–1727, Linux 6.12), but a counter
/// goes down all the same: it wraps (the bma400's is 24 bits, `bma400_get_steps_reg`,
/// drivers/iio/accel/bma400_core.c:797–812; the bmi270's 16, `bmi270_read_steps`), it is reset (the
/// bmi270 by a write of 0, `bmi270_write_raw`), and a chip that lost power starts from 0. A count
/// below the last is a wrap where the steps it means (up to the counter's top, then from 0) could
/// have been walked since, else a reset, whose whole new count is new steps. A jump no one could
/// walk in the time (more than `fastestCadence` steps a second) is not added: counting goes on from
/// the new count.
struct ChipStepCount: Sendable, Hashable, Codable {
    /// Steps a second beyond which a rise of the count is no walk: the fastest steps on record are
    /// 4.3 a second (the history's own bound, `GaitHistory.maximumTotalSteps`, takes 5).
    static let fastestCadence = 5.0
    /// The least time a plausibility bound allows, s: two reads a moment apart (an event and a
    /// timer's read) may see the few steps taken between them, and a clock set back gives no time.
    static let leastTime = 10.0

    /// The counter's device (`iio:deviceN`): a count of another counter starts afresh.
    var device: String
    /// The count last read, in [0, modulus).
    var count: Int64
    /// When it was read, ns of Unix time (which outlives a restart).
    var time: Int64

    /// What a reading of the counter means for the history.
    enum Reading: Equatable {
        /// The first reading of this counter: nothing to add, counting starts from it.
        case first
        /// The steps since the last reading.
        case steps(Int)
        /// The counter wrapped at its top since the last reading: the steps since.
        case wrapped(steps: Int)
        /// The counter went down and was reset (or lost power): its new count is the steps since.
        case reset(steps: Int)
        /// More steps than anyone can walk in the time: not added, counting goes on from the new count.
        case implausible(count: Int64, seconds: Double)

        /// The steps to add.
        var steps: Int {
            switch self {
            case .first, .implausible: 0
            case .steps(let steps), .wrapped(let steps), .reset(let steps): steps
            }
        }
    }

    /// Takes a reading `count` of `device`'s counter, whose values run in [0, `modulus`) (0: unknown),
    /// made at `time` (ns of Unix time); `last` is the state before it (nil: none kept). Returns the
    /// new state and what the reading means.
    static func reconcile(_ last: ChipStepCount?, device: String, count: Int64, modulus: Int64, at time: Int64) -> (ChipStepCount, Reading) {
        let next = ChipStepCount(device: device, count: count, time: time)
        guard let last, last.device == device else { return (next, .first) }
        let seconds = max(time.seconds(since: last.time), leastTime)
        let walkable = Int64(min(fastestCadence * seconds, Double(GaitHistory.maximumTotalSteps)))
        let reading: Reading
        if count >= last.count {
            reading = .steps(Int(count - last.count))
        } else if modulus > last.count, modulus - last.count + count <= walkable {
            reading = .wrapped(steps: Int(modulus - last.count + count))
        } else {
            reading = .reset(steps: Int(count))
        }
        guard Int64(reading.steps) <= walkable else { return (next, .implausible(count: count, seconds: seconds)) }
        return (next, reading)
    }
}
