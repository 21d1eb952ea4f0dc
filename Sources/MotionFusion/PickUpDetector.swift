#if canImport(Glibc)
import Glibc
#endif
import MotionCore

/// A pick-up: the device lay still, then within a short time of starting to move it was turned well
/// away from the pose it lay in (taken from a table into the hand, out of a pocket or a bag). A
/// device nudged on its table, or carried without turning, is not picked up; one reported is
/// not again until it has lain still once more.
///
/// Parameters:
/// - `stillness` 0.5 m/s²: how far the specific force may stray from its low-passed value (gravity,
///   τ = `gravityTimeConstant` 0.2 s), root mean square over `deviationTimeConstant` 0.1 s, for the
///   device to count as still (a hand's tremor is 0.1–0.3; a step, 2 and more). Averaged, not
///   sample by sample: one noisy sample in a thousand would otherwise end a rest at 1 kHz and not at
///   25 Hz, and the detector would depend on the rate;
/// - `restDuration` 1 s: how long still counts as lying;
/// - `turn` 30°: the turn of gravity from the resting pose that makes a pick-up;
/// - `window` 2 s: how long after it starts moving the turn must come (a nudge after which it is
///   still again in its pose does not start it).
public struct PickUpDetector: Sendable {
    public struct Parameters: Sendable, Hashable {
        /// m/s².
        public var stillness = 0.5
        /// s.
        public var gravityTimeConstant = 0.2
        /// s.
        public var deviationTimeConstant = 0.1
        /// s.
        public var restDuration = 1.0
        /// Radians.
        public var turn = 30.0 * .pi / 180
        /// s.
        public var window = 2.0
        /// Defaults as above.
        public init() {}
    }

    public let parameters: Parameters
    private var gravity: Vector3?
    /// The mean square of the specific force's deviation from gravity, (m/s²)².
    private var deviation = 0.0
    private var lastTimestamp: Int64?
    /// When the device became still, while it is.
    private var stillSince: Int64?
    /// The gravity direction of the last rest long enough to count, and when the device left it.
    private var restingPose: Vector3?
    private var movingSince: Int64?

    /// A detector with `parameters`.
    public init(parameters: Parameters = Parameters()) { self.parameters = parameters }

    /// Feeds one specific force (m/s², device frame) sampled at `timestamp` (ns); true when it
    /// completes a pick-up.
    public mutating func update(specificForce: Vector3, timestamp: Int64) -> Bool {
        guard let previous = lastTimestamp, timestamp > previous, let low = gravity else {
            // The first sample, or a clock that went back: start over from here.
            gravity = specificForce
            deviation = 0
            lastTimestamp = timestamp
            stillSince = timestamp
            restingPose = nil
            movingSince = nil
            return false
        }
        lastTimestamp = timestamp
        // Saturating (`TimestampArithmetic`): a device's jump of any size is a long gap, not a trap.
        let dt = timestamp.seconds(since: previous)
        let updated = low + (specificForce - low) * min(1, dt / parameters.gravityTimeConstant)
        gravity = updated
        deviation += ((specificForce - updated).squaredLength - deviation) * min(1, dt / parameters.deviationTimeConstant)
        let still = deviation < parameters.stillness * parameters.stillness
        if still {
            if stillSince == nil { stillSince = timestamp }
            // Still again in the pose it lay in: a nudge (the table touched), not the start of a
            // pick-up; the window starts over at the next motion.
            if let pose = restingPose, Self.angle(pose, updated) < parameters.turn / 3 { movingSince = nil }
            if timestamp.nanoseconds(since: stillSince!) >= Int64(parameters.restDuration * 1e9) {
                restingPose = updated
                movingSince = nil
            }
            return false
        }
        stillSince = nil
        guard let pose = restingPose else { return false }
        if movingSince == nil { movingSince = timestamp }
        if timestamp.nanoseconds(since: movingSince!) > Int64(parameters.window * 1e9) {
            restingPose = nil  // moved without turning: carried, not picked up
            return false
        }
        guard Self.angle(pose, updated) > parameters.turn else { return false }
        restingPose = nil
        return true
    }

    /// The angle between two directions, radians.
    static func angle(_ a: Vector3, _ b: Vector3) -> Double {
        let lengths = a.length * b.length
        guard lengths > 0 else { return 0 }
        return acos(max(-1, min(1, a.dot(b) / lengths)))
    }
}
