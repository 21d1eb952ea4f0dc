import MotionCore
import MotionWire

/// The steps counted in each minute and the activities reported, over the last 7 days, in wall-clock
/// time (CLOCK_REALTIME, which outlives a boot), and the total count: what `HISTORY` answers from
/// and what is kept across restarts (`Saved`).
///
/// Fixed storage: one slot per minute of the week, reused as the week turns, and at most
/// `activitiesKept` activities; nothing grows with uptime.
struct GaitHistory: Sendable {
    static let minutesKept = Int64(Request.History.kept / 60)
    static let activitiesKept = 4096
    static let activitiesPerReply = 1024
    /// The largest total a saved history may hold, and where counting stops: 5 steps a second for 125
    /// years, more than anyone walks (the fastest steps on record are 4.3 a second, the longest life
    /// 122 years). A total above it was not counted (a file edited or damaged); near `Int.max` it
    /// made the next step trap, at every restart.
    static let maximumTotalSteps = 5 * 86_400 * 36_525 * 125 / 100

    /// Steps since the history began, at most `maximumTotalSteps`.
    private(set) var totalSteps = 0
    /// Steps per slot; a slot holds minute `minuteOfSlot[i]` (Unix minutes), `i` = minute mod `minutesKept`.
    private var stepsOfSlot: [Int32]
    private var minuteOfSlot: [Int64]
    /// Sorted by start, oldest first.
    private var activities: [HistoryReply.Activity] = []
    /// The chip's step counter as last read, where a chip counts the steps (`ChipStepCount`).
    var chipCounter: ChipStepCount?

    /// What is written to the state directory.
    struct Saved: Codable, Sendable, Hashable {
        var version = 1
        var totalSteps: Int
        /// (Unix minute, steps), for minutes with steps.
        var minutes: [[Int64]]
        var activities: [HistoryReply.Activity]
        /// The chip's step counter as last read (absent from histories saved before 1.11, and where
        /// no chip counts).
        var chipCounter: ChipStepCount?

        init(totalSteps: Int, minutes: [[Int64]], activities: [HistoryReply.Activity], chipCounter: ChipStepCount? = nil) {
            (self.totalSteps, self.minutes, self.activities, self.chipCounter) = (totalSteps, minutes, activities, chipCounter)
        }

        /// Decodes a saved history, refusing a total no one could have walked (`maximumTotalSteps`):
        /// the file is then set aside as corrupt, as one that does not decode.
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            version = try container.decode(Int.self, forKey: .version)
            totalSteps = try container.decode(Int.self, forKey: .totalSteps)
            guard (0...GaitHistory.maximumTotalSteps).contains(totalSteps) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .totalSteps, in: container,
                    debugDescription: "totalSteps \(totalSteps) is outside 0...\(GaitHistory.maximumTotalSteps), what one can walk in a lifetime")
            }
            minutes = try container.decode([[Int64]].self, forKey: .minutes)
            activities = try container.decode([HistoryReply.Activity].self, forKey: .activities)
            chipCounter = try container.decodeIfPresent(ChipStepCount.self, forKey: .chipCounter)
        }
    }

    /// An empty history, or the one `saved`, of which only what makes sense is taken: a file edited by
    /// hand or cut short cannot make a count negative or the storage grow. Minutes older than the week
    /// before `now` (ns of Unix time) are left out; minutes after `now` are kept: they were counted
    /// before the clock was set back, or before it was set right at boot (no RTC before NTP), and
    /// leaving them out erased them at the next save. Queries take them as `now` (`steps`) until the
    /// clock reaches them. The total is at least the steps of the minutes kept.
    init(saved: Saved? = nil, now: Int64) {
        stepsOfSlot = [Int32](repeating: 0, count: Int(Self.minutesKept))
        minuteOfSlot = [Int64](repeating: .min, count: Int(Self.minutesKept))
        guard let saved else { return }
        let current = Self.minute(of: now)
        var kept = 0
        for entry in saved.minutes where entry.count == 2 {
            let (minute, steps) = (entry[0], entry[1])
            guard minute > current - Self.minutesKept, (1...Int64(Int32.max)).contains(steps) else { continue }
            let slot = Self.slot(of: minute)
            // Two minutes a week or more apart in one slot (only a file edited by hand has them): the later.
            if minuteOfSlot[slot] > minute { continue }
            kept += Int(steps) - Int(stepsOfSlot[slot])
            minuteOfSlot[slot] = minute
            stepsOfSlot[slot] = Int32(steps)
        }
        totalSteps = min(max(0, saved.totalSteps, kept), Self.maximumTotalSteps)
        let valid = saved.activities.filter { $0.start.isFinite }.sorted { $0.start < $1.start }
        activities = Array(valid.suffix(Self.activitiesKept))
        // A count outside any counter's range is a file edited by hand: counting starts afresh.
        chipCounter = saved.chipCounter.flatMap { (0...Int64(UInt32.max)).contains($0.count) ? $0 : nil }
    }

    /// Every minute with steps, those after the clock's now included, and the activities.
    var saved: Saved {
        let minutes = (0..<stepsOfSlot.count).filter { stepsOfSlot[$0] > 0 }.map { [minuteOfSlot[$0], Int64(stepsOfSlot[$0])] }
        return Saved(totalSteps: totalSteps, minutes: minutes.sorted { $0[0] < $1[0] }, activities: activities, chipCounter: chipCounter)
    }

    /// The Unix minute of `time` (ns of Unix time).
    private static func minute(of time: Int64) -> Int64 {
        time / 60_000_000_000
    }

    /// The slot of `minute`: one per minute of the week.
    private static func slot(of minute: Int64) -> Int {
        Int(((minute % minutesKept) + minutesKept) % minutesKept)
    }

    /// Counts `steps` more, in the minute of `time` (ns of Unix time). The total stops at
    /// `maximumTotalSteps` rather than trap. A slot that holds a minute a week or more after `time`'s
    /// (steps counted before the clock was set back by more than a week, as to 1970) keeps it, and
    /// these steps join it: no step leaves the history, at the cost of their minute (they are
    /// answered as that minute's, which queries take as now until the clock reaches it).
    mutating func add(steps: Int, at time: Int64) {
        guard steps > 0 else { return }
        let (sum, overflow) = totalSteps.addingReportingOverflow(steps)
        totalSteps = overflow ? Self.maximumTotalSteps : min(sum, Self.maximumTotalSteps)
        let minute = Self.minute(of: time)
        let slot = Self.slot(of: minute)
        if minuteOfSlot[slot] < minute || stepsOfSlot[slot] == 0 {
            minuteOfSlot[slot] = minute
            stepsOfSlot[slot] = 0
        }
        stepsOfSlot[slot] = Int32(clamping: Int64(stepsOfSlot[slot]) + Int64(min(steps, Int(Int32.max))))
    }

    /// Records an activity reported; a rise in confidence of the one under way (same start) replaces it.
    /// Kept sorted by start, as the queries search them: after a clock set back, one goes before those
    /// counted earlier; when `activitiesKept` are kept, the oldest goes, this one if it is the oldest.
    mutating func add(_ activity: HistoryReply.Activity) {
        guard activity.start.isFinite else { return }
        var index = (activities.lastIndex { $0.start <= activity.start } ?? -1) + 1
        if index > 0, activities[index - 1].start == activity.start, activities[index - 1].activity == activity.activity {
            activities[index - 1] = activity
            return
        }
        if activities.count == Self.activitiesKept {
            guard index > 0 else { return }
            activities.removeFirst()
            index -= 1
        }
        activities.insert(activity, at: index)
    }

    /// Whether `time` (s of Unix time), taken as `now` if later, is in [`from`, `to`), or is `now` in
    /// a range that reaches `now` (a query's, whose `to` is `now` at the latest).
    private static func isIn(_ time: Double, from: Double, to: Double, now: Double) -> Bool {
        let time = min(time, now)
        return time >= from && (time < to || (time == now && to >= now))
    }

    /// The steps of the minutes that begin in [`from`, `to`) (seconds of Unix time), of the week before
    /// `now` (ns); a minute after `now` (kept from before the clock was set back) is taken as `now`.
    func steps(from: Double, to: Double, now: Int64) -> Int {
        let current = Self.minute(of: now)
        let nowSeconds = Double(now) * 1e-9
        var sum = 0
        for slot in 0..<stepsOfSlot.count where stepsOfSlot[slot] > 0 {
            let minute = minuteOfSlot[slot]
            if minute > current - Self.minutesKept, Self.isIn(Double(minute) * 60, from: from, to: to, now: nowSeconds) {
                sum += Int(stepsOfSlot[slot])
            }
        }
        return sum
    }

    /// The activity under way at `from`, then those that began in [`from`, `to`), oldest first, one
    /// that began after `now` (ns; kept from before the clock was set back) taken as begun at `now`:
    /// the newest `activitiesPerReply` of them, and whether older ones were left out.
    func activities(from: Double, to: Double, now: Int64) -> (activities: [HistoryReply.Activity], truncated: Bool) {
        let nowSeconds = Double(now) * 1e-9
        // Starts taken as now when later keep their order: the searches below stay valid.
        let firstInRange = activities.firstIndex { min($0.start, nowSeconds) >= from } ?? activities.endIndex
        let lower = firstInRange > activities.startIndex ? firstInRange - 1 : firstInRange
        let upper =
            activities[lower...].firstIndex { min($0.start, nowSeconds) >= from && !Self.isIn($0.start, from: from, to: to, now: nowSeconds) }
            ?? activities.endIndex
        let range = activities[lower..<upper]
        return (Array(range.suffix(Self.activitiesPerReply)), range.count > Self.activitiesPerReply)
    }
}
