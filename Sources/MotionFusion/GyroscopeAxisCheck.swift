import MotionCore

/// Whether the gyroscope's axes agree with the accelerometer's, from the device's own turns: while
/// the device turns without accelerating, the "up" the accelerometer reads turns in the device's
/// frame as `dû/dt = û × ω` (a vector fixed in the world, seen from a frame turning at ω), and
/// `TurnEvidence` weighs which of the 48 signed permutations of the gyroscope's axes (turns and
/// mirror images: a gyroscope with one axis inverted is a mirror image of its accelerometer)
/// explains it. A gyroscope mapped differently from its accelerometer (hhd's users flip axes
/// "until they match") turns the attitude the wrong way; this finds the matrix `P` that makes them agree.
///
/// Only samples with the specific force within 5 % of 1 g count. A verdict comes once the turns
/// have shown every axis (`TurnEvidence`): a device only ever turned about the vertical gets none.
public struct GyroscopeAxisCheck: Sendable {
    private var evidence = TurnEvidence()
    /// The verdict, once the evidence settles it (nil: not yet).
    public private(set) var verdict: AxesVerdict?

    public init() {}

    /// Takes the accelerometer's specific force (m/s²) and the gyroscope's rate (rad/s) at `t` ns,
    /// both in the device frame.
    public mutating func update(specificForce f: Vector3, rotationRate ω: Vector3, at t: Int64) {
        let g = Units.standardGravity
        let length = f.length
        guard abs(length - g) < 0.05 * g else { return evidence.interrupt() }
        guard evidence.add(direction: f * (1 / length), rotationRate: ω, at: t), let best = evidence.decision() else { return }
        verdict = best == 0 ? .agree : .disagree(TurnEvidence.candidates[best])
    }
}
