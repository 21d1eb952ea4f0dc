import MotionCore

/// Whether the magnetometer's axes agree with the gyroscope's (and so, once `GyroscopeAxisCheck` has
/// found those to agree, with the accelerometer's), from the device's own turns: the Earth's field is
/// fixed in the world, so seen from a frame turning at ω it turns as `dm̂/dt = m̂ × ω`, as gravity
/// does. For each of the 48 signed permutations P (`GyroscopeAxisCheck.candidates`) the check sums
/// the squared error of `(P m̂) × ω` as the prediction of the change of `P m̂` seen; the magnetometer
/// agrees when the identity predicts best. A magnetometer mapped differently from the rest (a chip on the back of
/// a phone, mounted upside down) makes the compass heading turn the wrong way.
///
/// The field must be calibrated (its hard-iron offset removed: the offset does not turn with the
/// device); only samples turning at 0.3 rad/s or more count, and a verdict needs `evidence` radians
/// of the field's turning.
///
/// The turning cannot tell P from −P (the field's sign drops out of `dm̂/dt = m̂ × ω`). The dip can:
/// where the hemisphere is known (`fieldPointsDown`: the World Magnetic Model's inclination at the
/// configured place), the one whose field points below the horizon there (or above, south of the
/// magnetic equator) wins; else the one that is a turn, not a mirror image, of the readings.
public struct MagnetometerAxisCheck: Sendable {
    /// Radians of turning, seen by the field, before a verdict.
    public var evidence = 3.0
    /// Inline, not an array: updated through an optional at each magnetometer sample (see
    /// `GyroscopeAxisCheck`'s).
    private var errors = InlineArray<48, Double>(repeating: 0)
    /// How far below the horizon each candidate's field points, summed.
    private var dips = InlineArray<48, Double>(repeating: 0)
    /// Whether the Earth's field points below the horizon where the device is (nil: not known).
    public var fieldPointsDown: Bool?
    private var turned = 0.0
    private var lastDirection: Vector3?
    private var lastTime: Int64?
    /// The verdict, once there is enough evidence (nil: not yet): `disagree(P)`, its readings are
    /// to be multiplied by P.
    public private(set) var verdict: AxesVerdict?

    public init() {}

    /// Takes the calibrated magnetic field (µT), the gyroscope's rate (rad/s) and the accelerometer's
    /// specific force (any unit: its direction is up) at `t` ns, all in the device frame.
    public mutating func update(field m: Vector3, rotationRate ω: Vector3, specificForce f: Vector3, at t: Int64) {
        defer { lastTime = t }
        let length = m.length
        guard length > 0, ω.length > 0.3 else {
            lastDirection = nil
            return
        }
        let direction = m * (1 / length)
        defer { lastDirection = direction }
        guard let last = lastDirection, let before = lastTime, t > before else { return }
        let dt = Double(t - before) * 1e-9
        guard dt < 0.1 else { return }  // a gap: the change is no derivative
        let seen = direction - last
        let down = f.length > 0 ? f * (-1 / f.length) : Vector3.zero
        for (index, p) in GyroscopeAxisCheck.candidates.enumerated() {
            errors[index] += (p * seen - (p * last).cross(ω) * dt).squaredLength
            dips[index] += (p * direction).dot(down)
        }
        turned += seen.length
        guard turned >= evidence else { return }
        var best = 0
        for index in errors.indices where errors[index] < errors[best] { best = index }
        let candidates = GyroscopeAxisCheck.candidates
        let opposite = candidates.firstIndex(of: candidates[best] * -1)!
        let winner: Int = if let fieldPointsDown {
            (dips[best] > 0) == fieldPointsDown ? best : opposite
        } else {
            candidates[best].determinant > 0 ? best : opposite
        }
        verdict = candidates[winner] == .identity ? .agree : .disagree(candidates[winner])
    }
}
