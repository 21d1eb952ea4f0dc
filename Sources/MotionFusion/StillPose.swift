#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import MotionCore

/// A pose held still, from a stream of accelerometer readings: the mean of the last `duration`
/// seconds once every reading in them is within `tolerance` of that mean and the mean is about 1 g
/// (nobody is moving it), and it differs from the pose before by at least `turn` (so the same pose
/// is not taken twice before the person has turned the device).
public struct StillPose: Sendable {
    /// Seconds it must hold still.
    public var duration = 1.0
    /// How far a reading may stray from the mean, in the readings' unit (0.05 g: a hand's tremor is
    /// less, a deliberate move more).
    public var tolerance: Double
    /// The smallest angle from the pose before, rad: 45°, half a quarter turn.
    public var turn = 45.0 * .pi / 180
    /// The pose before (nil: none).
    public var previous: Vector3?
    /// How strong gravity is in the readings' unit (1 for g, 9.80665 for m/s²).
    public let gravity: Double
    private var window: [(t: Double, v: Vector3)] = []

    /// Readings in a unit where gravity is `gravity`.
    public init(gravity: Double = 1, previous: Vector3? = nil) {
        self.gravity = gravity
        tolerance = 0.05 * gravity
        self.previous = previous
    }

    /// What the readings say so far.
    public enum State: Sendable, Equatable {
        /// Still for this fraction of `duration`.
        case holding(Double)
        /// Still, but where the pose before was: waiting for the turn.
        case notTurned
        /// Held: the mean reading.
        case held(Vector3)
    }

    /// Takes a reading at `t` seconds.
    public mutating func add(_ v: Vector3, at t: Double) -> State {
        window.append((t, v))
        window.removeAll { $0.t < t - duration }
        let mean = window.reduce(Vector3.zero) { $0 + $1.v } * (1 / Double(window.count))
        // Still since the first reading that strays: the window starts after it.
        if let strayed = window.lastIndex(where: { ($0.v - mean).length > tolerance }) { window.removeFirst(strayed + 1) }
        guard let first = window.first, abs(mean.length - gravity) < 0.1 * gravity else { return .holding(0) }
        let held = t - first.t
        guard held >= duration * 0.95 else { return .holding(max(0, held / duration)) }
        if let previous, angle(previous, mean) < turn { return .notTurned }
        return .held(mean)
    }

    private func angle(_ a: Vector3, _ b: Vector3) -> Double {
        let cosine = a.dot(b) / (a.length * b.length)
        return acos(max(-1, min(1, cosine)))
    }
}
