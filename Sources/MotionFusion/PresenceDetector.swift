import MotionCore

/// Whether a person is at the machine, from a human-presence sensor's readings (or a proximity
/// sensor's near/far), debounced as protocol 1.11's `presence` says: a change is reported at once;
/// a change that begins within `holdTime` of the last report is held until the new state has lasted
/// `holdTime`. A sensor flapping faster than that gives at most one report per `holdTime` (each
/// report is at least that long after the one before), and the state it settles in follows within
/// `holdTime` of settling; a person who leaves and comes back seconds later is told of at once both
/// times. The state is presence and attention; the distance is passed through with it and changes
/// nothing by itself (the HID sensor's distance is noisy: each wobble would be a report).
///
/// A held change is reported by the first reading at or after the instant it has lasted `holdTime`
/// (`heldUntil`), the same state read again counting, or by `release(at:)` at that instant: an HID
/// hub that reports only changes sends no such reading, so its owner sets a timer for `heldUntil`
/// (the detector itself keeps no clock). A reading the release overtook (stamped before it, yet not
/// before the reading before it: a capture's delivery lag, not a clock gone back) is taken as made at
/// the release, so the state it shows is held as any change after a report is.
///
/// Parameters:
/// - `holdTime` 1 s: a screen locked by an absence that lasted a tenth of a second, then woken, then
///   locked again, is what a flapping sensor would do to a session without it; a second is the
///   protocol's figure, short beside the tens of seconds a lock waits anyway;
/// - `attentionThreshold` 50 %: attention is true from it up (the driver reports 0 or 100, so the
///   middle; a value hovering at it is the hold's to settle).
public struct PresenceDetector: Sendable {
    /// The detector's parameters (units in the type's documentation).
    public struct Parameters: Sendable, Hashable {
        /// s.
        public var holdTime = 1.0
        /// %.
        public var attentionThreshold = 50.0
        /// Defaults as above.
        public init() {}
    }

    /// What is reported: presence, and attention where the sensor has it.
    public struct State: Sendable, Hashable {
        /// Whether a person is there.
        public var present: Bool
        /// Whether they look at the screen; nil where the sensor has no attention channel.
        public var attention: Bool?
        /// A state.
        public init(present: Bool, attention: Bool? = nil) { (self.present, self.attention) = (present, attention) }
    }

    /// The parameters in use.
    public let parameters: Parameters
    /// The state reported last; nil before the first reading.
    public private(set) var reported: State?
    /// The distance read last, m; nil where the sensor gives none.
    public private(set) var distance: Double?
    /// When the last report was made, ns.
    private var lastReport: Int64 = 0
    /// The state the readings say now, and since when (ns).
    private var current = State(present: false)
    private var currentSince: Int64 = 0
    /// The last reading's own timestamp, and the instant of the last `release(at:)` (ns; `.min`: none).
    private var lastReading: Int64 = .min
    private var releasedAt: Int64 = .min

    /// The instant a held change will have lasted `holdTime` and is to be reported (ns, the readings'
    /// clock); nil when no change is held. Every change not reported at once is held, so this is the
    /// instant `release(at:)` reports it if no reading has by then.
    public var heldUntil: Int64? {
        guard let reported, current != reported else { return nil }
        return currentSince.saturatingAdvanced(by: holdNanoseconds)
    }

    private var holdNanoseconds: Int64 { Int64(parameters.holdTime * 1e9) }

    /// A detector with `parameters`.
    public init(parameters: Parameters = Parameters()) { self.parameters = parameters }

    /// Feeds one reading at `timestamp` (ns): `present`; `attention` in % (NaN or infinite: the
    /// sensor has no attention channel); `distance` in m (NaN or infinite: none). Returns the state to
    /// report now (the first reading's at once), or nil.
    public mutating func update(present: Bool, attention: Double, distance: Double, timestamp reading: Int64) -> State? {
        self.distance = distance.isFinite ? distance : nil
        let state = State(present: present, attention: attention.isFinite ? attention >= parameters.attentionThreshold : nil)
        let timestamp = reading < releasedAt && reading >= lastReading ? releasedAt : reading
        lastReading = reading
        guard let reported else { return report(state, at: timestamp) }
        // A clock gone back: what came before says nothing of how long a state has lasted since, so a
        // change is held as if just after a report (each reported at once, a sensor whose stamps keep
        // going back while it flaps would send every flap: review).
        if timestamp < lastReport || timestamp < currentSince { (lastReport, currentSince) = (timestamp, timestamp) }
        if state != current { (current, currentSince) = (state, timestamp) }
        guard current != reported else { return nil }
        let hold = holdNanoseconds
        let isHeld = currentSince.nanoseconds(since: lastReport) < hold
        guard !isHeld || timestamp.nanoseconds(since: currentSince) >= hold else { return nil }
        return report(current, at: timestamp)
    }

    /// Reports the held change if it is due at `now` (ns, the readings' clock: `heldUntil` or later),
    /// by the same rule as a reading of the same state at `now` would; nil when none is held or it is
    /// not due yet. The report counts as made at `now` for the hold of the next change.
    public mutating func release(at now: Int64) -> State? {
        guard let due = heldUntil, now >= due else { return nil }
        releasedAt = now
        return report(current, at: now)
    }

    private mutating func report(_ state: State, at timestamp: Int64) -> State {
        (reported, lastReport, current, currentSince) = (state, timestamp, state, timestamp)
        return state
    }
}
