import MotionCore

/// Whether the gyroscope's axes agree with the accelerometer's, from the device's own turns: while
/// the device turns without accelerating, the "up" the accelerometer reads turns in the device's
/// frame as `dû/dt = û × ω` (a vector fixed in the world, seen from a frame turning at ω). For each
/// of the 48 signed permutations of the axes (turns and mirror images: a gyroscope with one axis
/// inverted is a mirror image of its accelerometer) the check sums the squared error of `û × Pω`
/// as the prediction of the change of û seen; the gyroscope agrees when the identity predicts best.
/// (A sum of agreements, `seen · (û × Pω)`, was fooled: a P that predicts larger changes wins it
/// though it points worse, and a gyroscope mounted right was taken for one with z inverted.)
/// A gyroscope mapped differently from its accelerometer (hhd's users flip axes "until they match")
/// turns the attitude the wrong way; this finds the matrix `P` that makes them agree.
///
/// Only samples with the specific force within 5 % of 1 g and a rotation of at least 0.3 rad/s
/// count (a turn about the vertical says nothing of two axes, which the sum weighs by itself: its
/// û × ω is zero). A verdict needs `evidence` radians of such turning.
public struct GyroscopeAxisCheck: Sendable {
    /// Radians of turning, seen by gravity, before a verdict.
    public var evidence = 3.0
    /// The 48 signed permutation matrices.
    public static let candidates: [Matrix3] = {
        var result: [Matrix3] = []
        let axes = [Vector3(x: 1, y: 0, z: 0), Vector3(x: 0, y: 1, z: 0), Vector3(x: 0, y: 0, z: 1)]
        for i in 0..<3 {
            for j in 0..<3 where j != i {
                for si in [1.0, -1.0] {
                    for sj in [1.0, -1.0] {
                        let r0 = axes[i] * si, r1 = axes[j] * sj
                        result.append(Matrix3(row0: r0, row1: r1, row2: r0.cross(r1)))
                        result.append(Matrix3(row0: r0, row1: r1, row2: r0.cross(r1) * -1))
                    }
                }
            }
        }
        return result
    }()

    /// Inline, not an array: the check is updated through an optional at each gyroscope sample, and
    /// an array's buffer shared with a copy would be copied (allocated) on write.
    private var errors = InlineArray<48, Double>(repeating: 0)
    private var turned = 0.0
    private var lastUp: Vector3?
    private var lastTime: Int64?
    /// The verdict, once there is enough evidence (nil: not yet).
    public private(set) var verdict: AxesVerdict?

    public init() {}

    /// Takes the accelerometer's specific force (m/s²) and the gyroscope's rate (rad/s) at `t` ns,
    /// both in the device frame.
    public mutating func update(specificForce f: Vector3, rotationRate ω: Vector3, at t: Int64) {
        defer { lastTime = t }
        let g = Units.standardGravity
        guard abs(f.length - g) < 0.05 * g, ω.length > 0.3 else {
            lastUp = nil
            return
        }
        let up = f * (1 / f.length)
        defer { lastUp = up }
        guard let last = lastUp, let before = lastTime, t > before else { return }
        let dt = Double(t - before) * 1e-9
        let seen = up - last
        guard dt < 0.1 else { return }  // a gap: the change is no derivative
        for (index, p) in Self.candidates.enumerated() {
            errors[index] += (seen - last.cross(p * ω) * dt).squaredLength
        }
        turned += seen.length
        guard turned >= evidence else { return }
        var best = 0
        for index in errors.indices where errors[index] < errors[best] { best = index }
        verdict = Self.candidates[best] == .identity ? .agree : .disagree(Self.candidates[best])
    }
}
