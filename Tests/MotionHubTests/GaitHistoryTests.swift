import Foundation
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
        let (between, truncated) = history.activities(from: t + 50, to: t + 300, now: Self.midnight + 600 * 1_000_000_000)
        #expect(between.map(\.activity) == [.stationary, .walking] && !truncated)
        #expect(between.last?.confidence == .high)
        let later = history.activities(from: t + 500, to: t + 600, now: Self.midnight + 600 * 1_000_000_000)
        #expect(later.activities.map(\.start) == [t + 400], "the one under way")
    }

    @Test func aReplyCarriesTheNewestActivitiesAndSaysWhenItLeftSomeOut() {
        var history = GaitHistory(now: Self.midnight)
        let t = Double(Self.midnight) * 1e-9
        for i in 0..<(GaitHistory.activitiesKept + 10) {
            history.add(HistoryReply.Activity(activity: i % 2 == 0 ? .walking : .stationary, confidence: .high, start: t + Double(i)))
        }
        let all = history.activities(from: t - 1, to: t + 1e6, now: Self.midnight + 1_000_000 * 1_000_000_000)
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

    /// A state file edited by hand: what cannot be true is dropped, and the total is at least the
    /// steps of the minutes kept. A minute after now is kept (a clock set back since it was counted).
    @Test func aSavedHistoryThatMakesNoSenseIsTakenOnlyWhereItDoes() {
        let current = Self.midnight / Self.minute
        let saved = GaitHistory.Saved(
            totalSteps: -40,
            minutes: [[current, 9], [current + 10, 5], [current - GaitHistory.minutesKept - 1, 5], [current - 1, -3], [current - 2], [current - 3, 1 << 40]],
            activities: [HistoryReply.Activity(activity: .walking, confidence: .low, start: .nan)])
        let history = GaitHistory(saved: saved, now: Self.midnight)
        #expect(history.totalSteps == 14)
        #expect(history.saved.minutes == [[current, 9], [current + 10, 5]])
        #expect(history.saved.activities.isEmpty)
    }

    /// A `totalSteps` near `Int.max` (issue 40, defect 7) made the next step trap, and so every
    /// restart: a total no one could walk is refused when the file is decoded (the store then sets
    /// the file aside), and counting stops at the bound rather than trap.
    @Test func aTotalNoOneCouldWalkIsRefusedAtLoadAndCountingCannotTrap() throws {
        let file = #"{"version":1,"totalSteps":9223372036854775800,"minutes":[],"activities":[]}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(GaitHistory.Saved.self, from: Data(file.utf8)) }
        let lifetime = #"{"version":1,"totalSteps":\#(GaitHistory.maximumTotalSteps),"minutes":[],"activities":[]}"#
        #expect(try JSONDecoder().decode(GaitHistory.Saved.self, from: Data(lifetime.utf8)).totalSteps == GaitHistory.maximumTotalSteps)

        // Given one anyway (not through the decoder), the history clamps it and counts on.
        var history = GaitHistory(saved: GaitHistory.Saved(totalSteps: .max - 5, minutes: [], activities: []), now: Self.midnight)
        history.add(steps: 10, at: Self.midnight)
        history.add(steps: .max, at: Self.midnight)
        #expect(history.totalSteps == GaitHistory.maximumTotalSteps)
        #expect(history.steps(from: 0, to: .infinity, now: Self.midnight) == Int(Int32.max), "the minute holds what it can")
    }

    /// Issue 40, defect 9: with the clock two days behind at start (no RTC before NTP), 100 of 141
    /// steps were dropped at load, and the next save erased them. They are kept and saved, answered
    /// as now while the clock is behind (the history agrees with the total), and in their own minutes
    /// once it is right again.
    @Test func minutesAfterNowAreKeptSavedAndAnsweredAsNowUntilTheClockReachesThem() {
        let realNow = Self.midnight + 600 * Self.minute
        let behind = realNow - 2 * 86_400 * 1_000_000_000
        let (hourAgo, walk) = ((behind - 3600 * 1_000_000_000) / Self.minute, (realNow - 30 * Self.minute) / Self.minute)
        let saved = GaitHistory.Saved(totalSteps: 141, minutes: [[hourAgo, 41], [walk, 60], [walk + 1, 40]], activities: [])
        var history = GaitHistory(saved: saved, now: behind)
        #expect(history.saved.minutes == saved.minutes, "nothing dropped, so no save drops it")
        let behindSeconds = Double(behind) * 1e-9
        #expect(history.steps(from: behindSeconds - 86_400, to: behindSeconds, now: behind) == 141, "all of the total")
        #expect(history.steps(from: behindSeconds - 86_400, to: behindSeconds - 60, now: behind) == 41, "a range that ends before now")

        // Steps while the clock is behind have their own minute; once it is set right, every minute is where it was counted.
        history.add(steps: 7, at: behind)
        #expect(history.totalSteps == 148)
        let nowSeconds = Double(realNow) * 1e-9
        #expect(history.steps(from: nowSeconds - 3600, to: nowSeconds, now: realNow) == 100)
        #expect(history.steps(from: nowSeconds - 7 * 86_400, to: nowSeconds, now: realNow) == 148)
    }

    /// A clock set back by more than a week (to 1970): every kept minute stays, and steps whose minute
    /// falls in a kept minute's slot (the same minute of the week) join it rather than erase it, so
    /// that the history keeps every step the total counts.
    @Test func inNineteenSeventyStepsInAKeptMinutesSlotJoinItRatherThanEraseIt() {
        let realNow = Self.midnight
        let kept = realNow / Self.minute - 30
        let saved = GaitHistory.Saved(totalSteps: 141, minutes: [[kept, 100], [kept + 1, 41]], activities: [])
        let epochNow = GaitHistory.minutesKept * 5 * Self.minute  // five weeks after the epoch
        var history = GaitHistory(saved: saved, now: epochNow)
        let sameMinuteOfTheWeek = kept % GaitHistory.minutesKept + GaitHistory.minutesKept * 4
        #expect(sameMinuteOfTheWeek * Self.minute < epochNow && sameMinuteOfTheWeek % GaitHistory.minutesKept == kept % GaitHistory.minutesKept)
        history.add(steps: 9, at: sameMinuteOfTheWeek * Self.minute + 1)
        history.add(steps: 4, at: epochNow)
        let epochSeconds = Double(epochNow) * 1e-9
        #expect(history.totalSteps == 154)
        #expect(history.steps(from: 0, to: epochSeconds, now: epochNow) == 154, "the history agrees with the total")
        #expect(history.saved.minutes.contains([kept, 109]) && history.saved.minutes.contains([kept + 1, 41]))
        let realSeconds = Double(realNow) * 1e-9
        #expect(history.steps(from: realSeconds - 86_400, to: realSeconds, now: realNow) == 150, "set right: the 1970 minute of 4 is out of the week")
    }

    /// Activities reported after the clock was set back go before those kept from before it, so that
    /// a query finds them (appended after a later one, they were never found); those kept from
    /// after now are answered as begun now.
    @Test func activitiesReportedAfterTheClockWasSetBackAreFoundByQueries() {
        let now = Self.midnight
        let t = Double(now) * 1e-9
        var history = GaitHistory(
            saved: GaitHistory.Saved(
                totalSteps: 0, minutes: [], activities: [HistoryReply.Activity(activity: .running, confidence: .high, start: t + 86_400)]),
            now: now)
        history.add(HistoryReply.Activity(activity: .walking, confidence: .medium, start: t - 600))
        history.add(HistoryReply.Activity(activity: .stationary, confidence: .high, start: t - 300))
        #expect(history.activities(from: t - 3600, to: t - 1, now: now).activities.map(\.activity) == [.walking, .stationary])
        #expect(history.activities(from: t - 3600, to: t, now: now).activities.map(\.activity) == [.walking, .stationary, .running])
        #expect(history.saved.activities.map(\.activity) == [.walking, .stationary, .running])
    }
}
