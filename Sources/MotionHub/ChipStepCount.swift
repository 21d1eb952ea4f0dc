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
/// walk in the time is not added: counting goes on from the new count. What may be walked is an
/// allowance that fills at `fastestCadence` steps a second of the time between readings and holds at
/// least `leastTime`'s worth, and each reading's steps are taken from it: a counter that goes down and
/// up again, read however often, adds no more than 5 steps a second on average (a fresh bound per
/// reading let 0, 50, 0, 50… add 50 each time).
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
    /// Steps the next readings may still add beyond what the time since this one fills, at most
    /// `leastTime`'s worth (absent from a history saved before it: a full allowance).
    var allowance: Double = ChipStepCount.fastestCadence * ChipStepCount.leastTime

    init(device: String, count: Int64, time: Int64, allowance: Double = ChipStepCount.fastestCadence * ChipStepCount.leastTime) {
        (self.device, self.count, self.time, self.allowance) = (device, count, time, allowance)
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        device = try container.decode(String.self, forKey: .device)
        count = try container.decode(Int64.self, forKey: .count)
        time = try container.decode(Int64.self, forKey: .time)
        // A file edited by hand cannot give more than a full allowance.
        let saved = try container.decodeIfPresent(Double.self, forKey: .allowance) ?? Self.fullAllowance
        allowance = saved.isFinite ? min(max(saved, 0), Self.fullAllowance) : 0
    }

    /// `leastTime`'s worth of steps.
    static let fullAllowance = fastestCadence * leastTime

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
    /// made at `time` (ns of Unix time); `last` is the state before it (nil: none kept). `elapsed`
    /// (s), where the last reading was of this run, is the monotonic clock's time since it: the wall
    /// clock may have been stepped between them (NTP, a clock set by hand), and only the shorter of
    /// the two counts. Returns the new state and what the reading means.
    static func reconcile(
        _ last: ChipStepCount?, device: String, count: Int64, modulus: Int64, at time: Int64, elapsed: Double? = nil
    ) -> (ChipStepCount, Reading) {
        var next = ChipStepCount(device: device, count: count, time: time)
        guard let last, last.device == device else { return (next, .first) }
        let wall = max(0, time.seconds(since: last.time))
        let seconds = elapsed.map { min(max(0, $0), wall) } ?? wall
        let filled = min(last.allowance + fastestCadence * seconds, max(fastestCadence * seconds, fullAllowance))
        let walkable = Int64(min(filled, Double(GaitHistory.maximumTotalSteps)))
        let reading: Reading
        if count >= last.count {
            reading = .steps(Int(count - last.count))
        } else if modulus > last.count, modulus - last.count + count <= walkable {
            reading = .wrapped(steps: Int(modulus - last.count + count))
        } else {
            reading = .reset(steps: Int(count))
        }
        guard Int64(reading.steps) <= walkable else {
            next.allowance = min(filled, fullAllowance)
            return (next, .implausible(count: count, seconds: seconds))
        }
        next.allowance = min(filled - Double(reading.steps), fullAllowance)
        return (next, reading)
    }
}
