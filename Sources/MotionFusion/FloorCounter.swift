import MotionCore

/// Floors climbed and descended on foot, from the altitude of a pressure sensor while the step
/// detector has a walk under way, as CoreMotion's `CMPedometer` counts them: a floor is about 3 m.
///
/// The altitude is low-passed (a pressure sensor's noise is centimetres, a door's draught more) and
/// measured from a reference that each counted floor moves by one floor height. Away from a walk for
/// longer than `grace` (a lift, the weather), the reference follows the altitude: only climbing on foot
/// counts. A walk is confirmed some steps after it starts, and a walker stops on a landing; the grace
/// keeps those seconds in the count.
///
/// Parameters:
/// - `floorHeight` 3 m;
/// - `timeConstant` 2 s, of the altitude's low-pass;
/// - `grace` 10 s.
public struct FloorCounter: Sendable {
    public struct Parameters: Sendable, Hashable {
        /// m.
        public var floorHeight = 3.0
        /// s.
        public var timeConstant = 2.0
        /// s.
        public var grace = 10.0
        /// Defaults as above.
        public init() {}
    }

    public let parameters: Parameters
    /// Floors climbed on foot.
    public private(set) var ascended = 0
    /// Floors gone down on foot.
    public private(set) var descended = 0
    private var altitude: Double?
    private var reference = 0.0
    private var lastTimestamp: Int64?
    /// The last instant a walk was under way, ns.
    private var lastWalking: Int64?

    /// A counter with `parameters`.
    public init(parameters: Parameters = Parameters()) { self.parameters = parameters }

    /// Feeds an altitude (m) read at `timestamp` (ns), with whether a walk is under way; returns
    /// whether a floor was counted.
    public mutating func update(altitude reading: Double, timestamp: Int64, isWalking: Bool) -> Bool {
        // A non-finite altitude would make the low-pass NaN, and no floor would be counted again.
        guard reading.isFinite else { return false }
        if isWalking { lastWalking = timestamp }
        // A stamp equal to the last (a reading repeated) is no step back: with dt 0 it moves nothing.
        guard let previous = lastTimestamp, timestamp >= previous, let low = altitude, low.isFinite else {
            // The first reading, or a clock gone back: start from here (a walk stamped on the clock
            // before is not recent on this one).
            altitude = reading
            reference = reading
            lastTimestamp = timestamp
            if !isWalking { lastWalking = nil }
            return false
        }
        lastTimestamp = timestamp
        // Saturating (`TimestampArithmetic`): a jump of any size forward is a long gap, not a trap.
        let dt = timestamp.seconds(since: previous)
        let smoothed = low + (reading - low) * min(1, dt / parameters.timeConstant)
        altitude = smoothed
        guard let walked = lastWalking, timestamp.seconds(since: walked) <= parameters.grace else {
            reference = smoothed
            return false
        }
        if smoothed - reference >= parameters.floorHeight {
            ascended += 1
            reference += parameters.floorHeight
            return true
        }
        if reference - smoothed >= parameters.floorHeight {
            descended += 1
            reference -= parameters.floorHeight
            return true
        }
        return false
    }
}
