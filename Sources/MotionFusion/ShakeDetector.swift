import MotionCore

/// A shake: most of the samples of a short window far above gravity, which a walk's heel strikes
/// (a few samples a step) or a device set down hard (one jolt) do not make.
///
/// The rule is Square's seismic detector's (Apache 2.0; its figures, not its code): a window of
/// 0.5 s with at least 4 samples, three quarters of them "accelerating", above 13 m/s² of specific
/// force (1.3 g), the threshold it uses for a hand's shake.
///
/// Parameters:
/// - `threshold` 13 m/s²: a sample above it is accelerating;
/// - `window` 0.5 s, `accelerating fraction` 0.75, `minimum samples` 4;
/// - `refractory` 1 s: one report per shake, however long it goes on.
public struct ShakeDetector: Sendable {
    public struct Parameters: Sendable, Hashable {
        /// m/s².
        public var threshold = 13.0
        /// s.
        public var window = 0.5
        public var acceleratingFraction = 0.75
        public var minimumSamples = 4
        /// s.
        public var refractory = 1.0
        /// Defaults as above.
        public init() {}
    }

    public let parameters: Parameters
    /// The window's samples, oldest first from `head`: (timestamp ns, accelerating). Fixed: a faster
    /// sensor than 2 kHz keeps its last 1,024 samples, a shorter window.
    private var times = [Int64](repeating: 0, count: Self.capacity)
    private var accelerating = [Bool](repeating: false, count: Self.capacity)
    private var head = 0, count = 0, acceleratingCount = 0
    private var lastShake: Int64?
    private static let capacity = 1024

    /// A detector with `parameters`.
    public init(parameters: Parameters = Parameters()) { self.parameters = parameters }

    /// Feeds one specific force (m/s², any frame) sampled at `timestamp` (ns); true when it completes a shake.
    public mutating func update(specificForce: Vector3, timestamp: Int64) -> Bool {
        let window = Int64(parameters.window * 1e9)
        // A clock that goes back, or a gap longer than the window, starts the window over.
        if count > 0, timestamp < times[(head + count - 1) % Self.capacity] { reset() }
        // Saturating (`TimestampArithmetic`): a jump of any size forward empties the window.
        while count > 0, timestamp.nanoseconds(since: times[head]) > window || count == Self.capacity { dropOldest() }
        let isAccelerating = specificForce.squaredLength > parameters.threshold * parameters.threshold
        let slot = (head + count) % Self.capacity
        times[slot] = timestamp
        accelerating[slot] = isAccelerating
        count += 1
        if isAccelerating { acceleratingCount += 1 }
        guard count >= parameters.minimumSamples,
            timestamp.nanoseconds(since: times[head]) >= window * 3 / 4,  // the window is (nearly) full: not the first jolt alone
            Double(acceleratingCount) >= parameters.acceleratingFraction * Double(count)
        else { return false }
        if let last = lastShake, timestamp.nanoseconds(since: last) < Int64(parameters.refractory * 1e9) { return false }
        lastShake = timestamp
        return true
    }

    private mutating func dropOldest() {
        if accelerating[head] { acceleratingCount -= 1 }
        head = (head + 1) % Self.capacity
        count -= 1
    }

    private mutating func reset() {
        head = 0
        count = 0
        acceleratingCount = 0
        lastShake = nil
    }
}
