import MotionCore
import Testing

@testable import MotionFusion

/// The presence debounce, against protocol 1.11's rules (docs/protocol.md, `presence`): "A change is
/// sent at once; after it, the next is held until the new state has lasted 1 s, so a sensor flapping
/// faster sends at most one change a second, and the state it settles in follows within 1 s.
/// Attention is `true` from 50 % up; `distance` is sent as the sensor gives it, and a change of it
/// alone sends no `PRESENCE`." Every expected instant below is worked out from those sentences by
/// hand (in the comment beside it), readings at presence's 10 Hz.
@Suite struct PresenceDetectorTests {
    typealias State = PresenceDetector.State

    /// One reading: present or not, attention %, distance m (NaN: no such channel), at `t` (ns).
    struct Reading {
        var present: Bool
        var attention = Double.nan
        var distance = Double.nan
        var t: Int64
    }

    /// The readings' reports: (instant ns, state), first first.
    static func reports(_ readings: [Reading], detector: inout PresenceDetector) -> [(t: Int64, state: State)] {
        readings.compactMap { r in
            detector.update(present: r.present, attention: r.attention, distance: r.distance, timestamp: r.t).map { (r.t, $0) }
        }
    }

    static let tenth: Int64 = 100_000_000
    static let second: Int64 = 1_000_000_000

    /// Readings every 0.1 s from `start` (ns) for `count` readings, each `present(k)`.
    static func tenHertz(from start: Int64, count: Int, present: (Int) -> Bool) -> [Reading] {
        (0..<count).map { Reading(present: present($0), t: start + Int64($0) * tenth) }
    }

    /// Present 2 s, absent 2 s, present 2 s: each change more than 1 s after the last report, so each
    /// is reported at once, by the reading that shows it (0, 2.0 and 4.0 s).
    @Test func presentAbsentPresentIsEachReportedAtOnce() {
        var detector = PresenceDetector()
        let readings = Self.tenHertz(from: 0, count: 60) { k in k < 20 || k >= 40 }
        let reports = Self.reports(readings, detector: &detector)
        #expect(reports.map(\.t) == [0, 2 * Self.second, 4 * Self.second])
        #expect(reports.map(\.state.present) == [true, false, true])
        #expect(reports.allSatisfy { $0.state.attention == nil }, "no attention channel: none told")
    }

    /// Absent reported at 2.0 s; present from 2.3 s began 0.3 s after that report, so it is held until it
    /// has lasted 1 s: reported by the reading at 3.3 s, not before. Back to absent at 5.0 s: 1.7 s
    /// after the last report, at once.
    @Test func aChangeSoonAfterAReportIsHeldUntilItHasLastedOneSecond() {
        var detector = PresenceDetector()
        let readings = Self.tenHertz(from: 0, count: 60) { k in k < 20 || (k >= 23 && k < 50) }
        let reports = Self.reports(readings, detector: &detector)
        #expect(reports.map(\.t) == [0, 2 * Self.second, 33 * Self.tenth, 5 * Self.second])
        #expect(reports.map(\.state.present) == [true, false, true, false])
    }

    /// Present 2 s, then flapping at 10 Hz for 5 s (present at 2.0, 2.2, …, 6.8 s; absent at 2.1, …,
    /// 6.9 s), then present from 7.0 s on. By the rules: 2.0 present is no change; 2.1 absent, 2.1 s
    /// after the report at 0: at once. The flap's presents (2.2, 2.4, …) begin within 1 s of 2.1 and
    /// last 0.1 s: held, never out, until the one beginning 1 s or more after 2.1, at 3.2: at once.
    /// Likewise absent at 4.3, present at 5.4, absent at 6.5. Present from 7.0 began 0.5 s after
    /// 6.5: held until it has lasted 1 s, out at 8.0 s, by the capture's next reading of the same
    /// state (no new state needed). So reports at least 1 s apart (at most one a second), and the
    /// settled state 1.0 s after settling.
    @Test func aFlappingSensorGivesAtMostOneReportASecondAndTheSettledStateWithinOneSecond() {
        var detector = PresenceDetector()
        let steady = Self.tenHertz(from: 0, count: 20) { _ in true }
        let flapping = Self.tenHertz(from: 2 * Self.second, count: 50) { k in k % 2 == 0 }
        let settled = Self.tenHertz(from: 7 * Self.second, count: 30) { _ in true }
        let reports = Self.reports(steady + flapping + settled, detector: &detector)
        #expect(reports.map(\.t) == [0, 21, 32, 43, 54, 65, 80].map { $0 * Self.tenth })
        #expect(reports.map(\.state.present) == [true, false, true, false, true, false, true])
        for (earlier, later) in zip(reports, reports.dropFirst()) {
            #expect(later.t - earlier.t >= Self.second, "at most one report a second")
        }
        let settling = 7 * Self.second
        #expect(reports.last!.state.present && reports.last!.t - settling <= Self.second, "the settled state within 1 s")
        #expect(detector.reported == State(present: true))
    }

    /// Attention is true from 50 % up (the protocol's threshold): 0 false, 49.9 still false (no
    /// report), 50 true, 100 still true (no report), 49 false. Each value held 2 s, so each change is
    /// out at once.
    @Test func attentionIsTrueFromFiftyPercentUp() {
        var detector = PresenceDetector()
        let values = [0, 49.9, 50, 100, 49]
        let readings = values.enumerated().flatMap { i, value in
            (0..<20).map { k in Reading(present: true, attention: value, distance: 0.65, t: Int64(i * 20 + k) * Self.tenth) }
        }
        let reports = Self.reports(readings, detector: &detector)
        #expect(reports.map(\.t) == [0, 4 * Self.second, 8 * Self.second])
        #expect(reports.map(\.state) == [State(present: true, attention: false), State(present: true, attention: true), State(present: true, attention: false)])
    }

    /// A change of attention alone is a change of state, debounced as presence is: attention turning
    /// 0.4 s after a report is held until it has lasted 1 s.
    @Test func anAttentionChangeIsDebouncedAsPresenceIs() {
        var detector = PresenceDetector()
        let readings = (0..<40).map { k in Reading(present: k < 20, attention: k < 24 ? 100 : 0, t: Int64(k) * Self.tenth) }
        let reports = Self.reports(readings, detector: &detector)
        // 0: present, attentive. 2.0: absent (at once). 2.4: attention 0 began 0.4 s after it: out at 3.4.
        #expect(reports.map(\.t) == [0, 2 * Self.second, 34 * Self.tenth])
        #expect(reports.map(\.state) == [State(present: true, attention: true), State(present: false, attention: true), State(present: false, attention: false)])
    }

    /// The distance changes nothing by itself: 0.65 m, then 1.2 m, then 0.3 m, the person present and
    /// attentive throughout, make the first report only; the detector keeps the last distance.
    @Test func aChangeOfDistanceAloneReportsNothing() {
        var detector = PresenceDetector()
        let readings = [0.65, 1.2, 0.3].enumerated().flatMap { i, metres in
            (0..<20).map { k in Reading(present: true, attention: 100, distance: metres, t: Int64(i * 20 + k) * Self.tenth) }
        }
        let reports = Self.reports(readings, detector: &detector)
        #expect(reports.map(\.t) == [0])
        #expect(detector.distance == 0.3)
    }

    /// NaN is a channel the sensor lacks (SensorKind.humanPresence): no attention told, no distance;
    /// an infinite value is no value either (JSON has none).
    @Test func nonFiniteChannelsAreNone() {
        var detector = PresenceDetector()
        #expect(detector.update(present: true, attention: .nan, distance: .nan, timestamp: 0) == State(present: true, attention: nil))
        #expect(detector.distance == nil)
        _ = detector.update(present: true, attention: .nan, distance: .infinity, timestamp: Self.tenth)
        #expect(detector.distance == nil)
        _ = detector.update(present: true, attention: .nan, distance: 0.8, timestamp: 2 * Self.tenth)
        #expect(detector.distance == 0.8)
    }

    /// A sensor that reports only changes (hid-sensor-prox with its hysteresis kept) sends no reading
    /// after the held one: present reported at 0; absent at 0.3 s began 0.3 s after that report, so it
    /// is held until it has lasted 1 s, i.e. due at 0.3 + 1.0 = 1.3 s ("the state it settles in follows
    /// within 1 s"). `release(at:)` lets nothing out before 1.3 s, and absent at exactly 1.3 s; then
    /// nothing is held. The release is a report: present again at 1.5 s, 0.2 s after it, is held until
    /// 2.5 s. With nothing held, a release reports nothing.
    @Test func aHeldChangeWithNoFurtherReadingsIsReleasedAtExactlyTheHoldsEnd() {
        var detector = PresenceDetector()
        #expect(detector.release(at: 0) == nil && detector.heldUntil == nil, "nothing read, nothing held")
        #expect(detector.update(present: true, attention: .nan, distance: .nan, timestamp: 0) == State(present: true))
        #expect(detector.heldUntil == nil)
        #expect(detector.update(present: false, attention: .nan, distance: .nan, timestamp: 3 * Self.tenth) == nil, "held")
        #expect(detector.heldUntil == 13 * Self.tenth)
        #expect(detector.release(at: 3 * Self.tenth) == nil)
        #expect(detector.release(at: 13 * Self.tenth - 1) == nil, "not a nanosecond before the hold's end")
        #expect(detector.heldUntil == 13 * Self.tenth, "an early release changes nothing")
        #expect(detector.release(at: 13 * Self.tenth) == State(present: false))
        #expect(detector.reported == State(present: false) && detector.heldUntil == nil)
        #expect(detector.release(at: 14 * Self.tenth) == nil, "released once")
        #expect(detector.update(present: true, attention: .nan, distance: .nan, timestamp: 15 * Self.tenth) == nil, "0.2 s after the release: held")
        #expect(detector.heldUntil == 25 * Self.tenth)
        #expect(detector.release(at: 25 * Self.tenth) == State(present: true))
    }

    /// A flap back before the hold's end holds nothing: present at 0, absent at 0.3 s (held, due
    /// 1.3 s), present again at 0.8 s, the state reported: nothing is due, and a release at 1.3 s
    /// reports nothing.
    @Test func aFlapBackBeforeTheHoldsEndLeavesNothingToRelease() {
        var detector = PresenceDetector()
        _ = detector.update(present: true, attention: .nan, distance: .nan, timestamp: 0)
        _ = detector.update(present: false, attention: .nan, distance: .nan, timestamp: 3 * Self.tenth)
        #expect(detector.heldUntil == 13 * Self.tenth)
        #expect(detector.update(present: true, attention: .nan, distance: .nan, timestamp: 8 * Self.tenth) == nil)
        #expect(detector.heldUntil == nil)
        #expect(detector.release(at: 13 * Self.tenth) == nil)
        #expect(detector.reported == State(present: true))
    }

    /// A reading the release overtook (a capture's delivery lag: stamped 1.25 s, after the reading
    /// before it at 0.3 s, but arriving after the release at 1.3 s) counts from the release: present at
    /// 1.25 s is taken as at 1.3 s, 0 s after a report, so held until 2.3 s, not out at once. One stamped
    /// before the reading before it (0.1 s < 0.3 s) is a clock gone back: held a second from it.
    @Test func aReadingTheReleaseOvertookCountsFromTheRelease() {
        func released() -> PresenceDetector {
            var detector = PresenceDetector()
            _ = detector.update(present: true, attention: .nan, distance: .nan, timestamp: 0)
            _ = detector.update(present: false, attention: .nan, distance: .nan, timestamp: 3 * Self.tenth)
            _ = detector.release(at: 13 * Self.tenth)
            return detector
        }
        var lagging = released()
        #expect(lagging.update(present: true, attention: .nan, distance: .nan, timestamp: 125 * Self.tenth / 10) == nil)
        #expect(lagging.heldUntil == 23 * Self.tenth)
        var goneBack = released()
        #expect(goneBack.update(present: true, attention: .nan, distance: .nan, timestamp: Self.tenth) == nil)
        #expect(goneBack.heldUntil == 11 * Self.tenth)
    }

    /// A clock gone back (a device's own clock reset, an untrusted remote's stamps) tells nothing of how
    /// long a state lasted: its change is held a second from it, as after a report, and a sensor that
    /// flaps every 0.1 s with each stamp 0.2 s before the last sends nothing more (review: each flap
    /// was sent).
    @Test func aClockGoneBackHoldsTheChangeASecond() {
        var detector = PresenceDetector()
        _ = detector.update(present: true, attention: .nan, distance: .nan, timestamp: 10 * Self.second)
        #expect(detector.update(present: false, attention: .nan, distance: .nan, timestamp: Self.second) == nil)
        #expect(detector.heldUntil == 2 * Self.second)
        #expect(detector.release(at: 2 * Self.second) == State(present: false))
        var flapping = PresenceDetector()
        _ = flapping.update(present: true, attention: .nan, distance: .nan, timestamp: 100 * Self.second)
        let sent = (1...50).compactMap { k in
            flapping.update(present: k % 2 == 0, attention: .nan, distance: .nan, timestamp: 100 * Self.second - Int64(k) * 2 * Self.tenth)
        }
        #expect(sent.isEmpty, "\(sent.count) flaps sent")
    }
}
