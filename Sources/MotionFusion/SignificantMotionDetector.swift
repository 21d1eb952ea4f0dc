import MotionCore

/// Android's significant motion, "a motion that might lead to a change in the user's location": a
/// walk or run the step detector confirms, after a quiet spell. A still pocket or a shaking table
/// makes no walk (StepDetector's gait gate); a pause at a crossing is not a new motion.
///
/// Parameters:
/// - `quietTime` 60 s: how long without a walk before a new one counts again.
public struct SignificantMotionDetector: Sendable {
    public struct Parameters: Sendable, Hashable {
        /// s.
        public var quietTime = 60.0
        /// Defaults as above.
        public init() {}
    }

    public let parameters: Parameters
    private var wasWalking = false
    /// The last instant a walk was under way, ns.
    private var lastWalking: Int64?

    /// A detector with `parameters`.
    public init(parameters: Parameters = Parameters()) { self.parameters = parameters }

    /// Feeds whether a walk is under way (`StepDetector.isWalking`) at `timestamp` (ns); true when a
    /// significant motion begins.
    public mutating func update(isWalking: Bool, timestamp: Int64) -> Bool {
        defer {
            wasWalking = isWalking
            if isWalking { lastWalking = timestamp }
        }
        guard isWalking, !wasWalking else { return false }
        guard let last = lastWalking, timestamp >= last else { return true }  // the first walk, or a clock gone back
        return timestamp.nanoseconds(since: last) > Int64(parameters.quietTime * 1e9)
    }
}
