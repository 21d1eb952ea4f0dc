import MotionCore
import MotionWire
import Testing

@testable import MotionHub

/// The week of steps and activities that `HISTORY` answers from and a restart keeps.
@Suite struct GaitHistoryTests {
    /// 2026-11-25 00:00:00 UTC, ns of Unix time.
    static let midnight: Int64 = 1_795_564_800 * 1_000_000_000
    static let minute: Int64 = 60_000_000_000

    @Test func stepsAreCountedByTheMinuteTheyFellIn() {
        var history = GaitHistory(now: Self.midnight)
        history.add(steps: 10, at: Self.midnight + 5_000_000_000)
        history.add(steps: 7, at: Self.midnight + 59_000_000_000)
        history.add(steps: 5, at: Self.midnight + Self.minute + 1)
        let now = Self.midnight + 2 * Self.minute
        let start = Double(Self.midnight) * 1e-9
        #expect(history.totalSteps == 22)
        #expect(history.steps(from: start, to: start + 120, now: now) == 22)
        #expect(history.steps(from: start, to: start + 60, now: now) == 17, "the first minute only")
        #expect(history.steps(from: start + 1, to: start + 120, now: now) == 5, "a minute that begins before from is not counted")
        #expect(history.steps(from: start - 60, to: start, now: now) == 0)
    }

    /// A week later the same slot holds the new minute; the old one is gone from the range it was in,
    /// while the total keeps it.
    @Test func aMinuteAWeekOldMakesWayForTheNew() {
        var history = GaitHistory(now: Self.midnight)
        history.add(steps: 10, at: Self.midnight)
        let weekLater = Self.midnight + GaitHistory.minutesKept * Self.minute
        history.add(steps: 3, at: weekLater)
        let start = Double(Self.midnight) * 1e-9
        #expect(history.steps(from: start, to: start + 60, now: weekLater) == 0)
        #expect(history.steps(from: start, to: Double(weekLater) * 1e-9 + 60, now: weekLater) == 3)
        #expect(history.totalSteps == 13)
    }

    @Test func theActivityUnderWayAtTheStartComesFirstAndAConfidenceRiseReplacesItsEntry() {
        var history = GaitHistory(now: Self.midnight)
        let t = Double(Self.midnight) * 1e-9
        history.add(HistoryReply.Activity(activity: .stationary, confidence: .high, start: t))
        history.add(HistoryReply.Activity(activity: .walking, confidence: .medium, start: t + 100))
        history.add(HistoryReply.Activity(activity: .walking, confidence: .high, start: t + 100))
        history.add(HistoryReply.Activity(activity: .stationary, confidence: .high, start: t + 400))
        let (between, truncated) = history.activities(from: t + 50, to: t + 300)
        #expect(between.map(\.activity) == [.stationary, .walking] && !truncated)
        #expect(between.last?.confidence == .high)
        #expect(history.activities(from: t + 500, to: t + 600).activities.map(\.start) == [t + 400], "the one under way")
    }

    @Test func aReplyCarriesTheNewestActivitiesAndSaysWhenItLeftSomeOut() {
        var history = GaitHistory(now: Self.midnight)
        let t = Double(Self.midnight) * 1e-9
        for i in 0..<(GaitHistory.activitiesKept + 10) {
            history.add(HistoryReply.Activity(activity: i % 2 == 0 ? .walking : .stationary, confidence: .high, start: t + Double(i)))
        }
        let all = history.activities(from: t - 1, to: t + 1e6)
        #expect(all.activities.count == GaitHistory.activitiesPerReply && all.truncated)
        #expect(all.activities.last?.start == t + Double(GaitHistory.activitiesKept + 9))
        #expect(history.saved.activities.count == GaitHistory.activitiesKept, "the oldest went first")
    }

    @Test func whatIsSavedIsWhatIsRestored() {
        var history = GaitHistory(now: Self.midnight)
        history.add(steps: 12, at: Self.midnight)
        history.add(HistoryReply.Activity(activity: .walking, confidence: .low, start: 1_795_564_800))
        let restored = GaitHistory(saved: history.saved, now: Self.midnight + Self.minute)
        #expect(restored.saved == history.saved)
        #expect(restored.steps(from: 1_795_564_800, to: 1_795_564_860, now: Self.midnight + Self.minute) == 12)
    }

    /// A state file edited by hand or written by a broken clock: what cannot be true is dropped.
    @Test func aSavedHistoryThatMakesNoSenseIsTakenOnlyWhereItDoes() {
        let current = Self.midnight / Self.minute
        let saved = GaitHistory.Saved(
            totalSteps: -40,
            minutes: [[current, 9], [current + 10, 5], [current - GaitHistory.minutesKept - 1, 5], [current - 1, -3], [current - 2], [current - 3, 1 << 40]],
            activities: [HistoryReply.Activity(activity: .walking, confidence: .low, start: .nan)])
        let history = GaitHistory(saved: saved, now: Self.midnight)
        #expect(history.totalSteps == 0)
        #expect(history.saved.minutes == [[current, 9]])
        #expect(history.saved.activities.isEmpty)
    }
}
