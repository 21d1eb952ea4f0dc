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

    /// Steps since the history began.
    private(set) var totalSteps = 0
    /// Steps per slot; a slot holds minute `minuteOfSlot[i]` (Unix minutes), `i` = minute mod `minutesKept`.
    private var stepsOfSlot: [Int32]
    private var minuteOfSlot: [Int64]
    /// Oldest first.
    private var activities: [HistoryReply.Activity] = []

    /// What is written to the state directory.
    struct Saved: Codable, Sendable, Hashable {
        var version = 1
        var totalSteps: Int
        /// (Unix minute, steps), for minutes with steps.
        var minutes: [[Int64]]
        var activities: [HistoryReply.Activity]
    }

    /// An empty history, or the one `saved`, of which only what fits the week before `now` (ns of Unix
    /// time) and makes sense is taken: a file edited by hand or cut short cannot make a count negative
    /// or the storage grow.
    init(saved: Saved? = nil, now: Int64) {
        stepsOfSlot = [Int32](repeating: 0, count: Int(Self.minutesKept))
        minuteOfSlot = [Int64](repeating: .min, count: Int(Self.minutesKept))
        guard let saved else { return }
        totalSteps = max(0, saved.totalSteps)
        let current = now / 60_000_000_000
        for entry in saved.minutes where entry.count == 2 {
            let (minute, steps) = (entry[0], entry[1])
            guard minute > current - Self.minutesKept, minute <= current, (1...Int64(Int32.max)).contains(steps) else { continue }
            let slot = Int(minute % Self.minutesKept)
            minuteOfSlot[slot] = minute
            stepsOfSlot[slot] = Int32(steps)
        }
        let valid = saved.activities.filter { $0.start.isFinite }.sorted { $0.start < $1.start }
        activities = Array(valid.suffix(Self.activitiesKept))
    }

    var saved: Saved {
        let minutes = (0..<stepsOfSlot.count).filter { stepsOfSlot[$0] > 0 }.map { [minuteOfSlot[$0], Int64(stepsOfSlot[$0])] }
        return Saved(totalSteps: totalSteps, minutes: minutes.sorted { $0[0] < $1[0] }, activities: activities)
    }

    /// Counts `steps` more, in the minute of `time` (ns of Unix time).
    mutating func add(steps: Int, at time: Int64) {
        guard steps > 0 else { return }
        totalSteps += steps
        let minute = time / 60_000_000_000
        let slot = Int(((minute % Self.minutesKept) + Self.minutesKept) % Self.minutesKept)
        if minuteOfSlot[slot] != minute {
            minuteOfSlot[slot] = minute
            stepsOfSlot[slot] = 0
        }
        stepsOfSlot[slot] = Int32(clamping: Int64(stepsOfSlot[slot]) + Int64(steps))
    }

    /// Records an activity reported; a rise in confidence of the one under way (same start) replaces it.
    mutating func add(_ activity: HistoryReply.Activity) {
        if let last = activities.last, last.start == activity.start, last.activity == activity.activity {
            activities[activities.count - 1] = activity
            return
        }
        if activities.count == Self.activitiesKept { activities.removeFirst() }
        activities.append(activity)
    }

    /// The steps of the minutes that begin in [`from`, `to`) (seconds of Unix time), of the week before `now` (ns).
    func steps(from: Double, to: Double, now: Int64) -> Int {
        let current = now / 60_000_000_000
        var sum = 0
        for slot in 0..<stepsOfSlot.count where stepsOfSlot[slot] > 0 {
            let minute = minuteOfSlot[slot]
            let start = Double(minute) * 60
            if minute > current - Self.minutesKept, start >= from, start < to { sum += Int(stepsOfSlot[slot]) }
        }
        return sum
    }

    /// The activity under way at `from`, then those that began in [`from`, `to`), oldest first: the
    /// newest `activitiesPerReply` of them, and whether older ones were left out.
    func activities(from: Double, to: Double) -> (activities: [HistoryReply.Activity], truncated: Bool) {
        let firstInRange = activities.firstIndex { $0.start >= from } ?? activities.endIndex
        let lower = firstInRange > activities.startIndex ? firstInRange - 1 : firstInRange
        let upper = activities[lower...].firstIndex { $0.start >= to } ?? activities.endIndex
        let range = activities[lower..<upper]
        return (Array(range.suffix(Self.activitiesPerReply)), range.count > Self.activitiesPerReply)
    }
}
