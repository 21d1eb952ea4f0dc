import MotionCore

/// Android's significant motion, "a motion that might lead to a change in the user location"
/// (walking, biking, a moving car or train; not a phone in the pocket of someone standing still, nor
/// a table shaken by traffic: source.android.com/docs/core/interaction/sensors/sensor-types,
/// "Significant motion"): a walk or run the step detector confirms and that goes on for
/// `minimumWalk`, after a quiet spell. A still pocket or a shaking table makes no walk (StepDetector's
/// gait gate); a hand moving the device may pass the gate for a few steps, but does not keep walking
/// on; a pause at a crossing is not a new motion.
///
/// Parameters:
/// - `quietTime` 60 s: how long without a significant walk before a new one counts again;
/// - `minimumWalk` 5 s: how long a confirmed walk must go on (the step detector confirms it after six
///   steps, about 3 s of walking; 5 s more is some ten steps, 7 m at a stroll: a change of place, not
///   a hand's few strokes).
public struct SignificantMotionDetector: Sendable {
    /// The detector's parameters (units in the type's documentation).
    public struct Parameters: Sendable, Hashable {
        /// s.
        public var quietTime = 60.0
        /// s.
        public var minimumWalk = 5.0
        /// Defaults as above.
        public init() {}
    }

    /// The parameters in use.
    public let parameters: Parameters
    /// When the walk under way began, ns; `nil` while none is.
    private var walkStart: Int64?
    /// Whether the walk under way may raise a significant motion (it began after a quiet spell and has
    /// not raised one yet).
    private var mayFire = false
    /// The last instant a walk that lasted `minimumWalk` was under way, ns.
    private var lastWalking: Int64?

    /// A detector with `parameters`.
    public init(parameters: Parameters = Parameters()) { self.parameters = parameters }

    /// Feeds whether a walk is under way (`StepDetector.isWalking`) at `timestamp` (ns); true when a
    /// significant motion is found: the walk has lasted `minimumWalk` and began after `quietTime`
    /// without such a walk.
    public mutating func update(isWalking: Bool, timestamp: Int64) -> Bool {
        guard isWalking else {
            walkStart = nil
            return false
        }
        if let start = walkStart, timestamp < start { walkStart = nil }  // a clock gone back: a new walk
        guard let start = walkStart else {
            walkStart = timestamp
            // The first walk, a clock gone back, or a quiet spell since the last significant walk.
            mayFire = lastWalking.map { timestamp < $0 || timestamp.nanoseconds(since: $0) > Int64(parameters.quietTime * 1e9) } ?? true
            return parameters.minimumWalk <= 0 ? fire(at: timestamp) : false
        }
        guard timestamp.nanoseconds(since: start) >= Int64(parameters.minimumWalk * 1e9) else { return false }
        return fire(at: timestamp)
    }

    /// The walk under way counts as significant at `timestamp`: true the first time after a quiet spell.
    private mutating func fire(at timestamp: Int64) -> Bool {
        lastWalking = timestamp
        defer { mayFire = false }
        return mayFire
    }
}
