import MotionCore

/// Whether the magnetometer's axes agree with the gyroscope's (and so, once `GyroscopeAxisCheck` has
/// found those to agree, with the accelerometer's), from the device's own turns: the Earth's field is
/// fixed in the world, so seen from a frame turning at ω it turns as `dm̂/dt = m̂ × ω`, as gravity
/// does. A magnetometer mapped differently from the rest (a chip on the back of a phone, mounted
/// upside down) makes the compass heading turn the wrong way.
///
/// Read by a magnetometer whose readings are to be multiplied by P, the field turns as
/// `m̂ × (det P · Pᵀ ω)`, so `TurnEvidence` finds Q = det P · Pᵀ, a turn whatever P is, and P is Qᵀ
/// or −Qᵀ: the turning cannot tell P from −P (the field's sign drops out). The dip can: where the
/// hemisphere is known (`fieldPointsDown`: the World Magnetic Model's inclination at the configured
/// place), the one whose field points below the horizon there (or above, south of the magnetic
/// equator) wins; else Qᵀ, the one that is a turn, not a mirror image, of the readings.
///
/// The field must be calibrated (its hard-iron offset removed: the offset does not turn with the device).
public struct MagnetometerAxisCheck: Sendable {
    private var evidence = TurnEvidence()
    /// Σ downᵢ·m̂ⱼ: how far below the horizon a candidate P's field points, summed, is Σ Pᵢⱼ of it.
    private var dip = Matrix3(row0: .zero, row1: .zero, row2: .zero)
    /// Whether the Earth's field points below the horizon where the device is (nil: not known).
    public var fieldPointsDown: Bool?
    /// The verdict, once the evidence settles it (nil: not yet): `disagree(P)`, its readings are
    /// to be multiplied by P.
    public private(set) var verdict: AxesVerdict?

    public init() {}

    /// Takes the calibrated magnetic field (µT), the gyroscope's rate (rad/s) and the accelerometer's
    /// specific force (any unit: its direction is up) at `t` ns, all in the device frame.
    public mutating func update(field m: Vector3, rotationRate ω: Vector3, specificForce f: Vector3, at t: Int64) {
        let length = m.length
        guard length > 0 else { return evidence.interrupt() }
        let direction = m * (1 / length)
        if f.length > 0 {
            let down = f * (-1 / f.length)
            dip.row0 = dip.row0 + direction * down.x
            dip.row1 = dip.row1 + direction * down.y
            dip.row2 = dip.row2 + direction * down.z
        }
        guard evidence.add(direction: direction, rotationRate: ω, at: t), let best = evidence.decision() else { return }
        let turn = TurnEvidence.candidates[best].transposed
        let pointsDown = turn.row0.dot(dip.row0) + turn.row1.dot(dip.row1) + turn.row2.dot(dip.row2) > 0
        let mending = fieldPointsDown.map { $0 == pointsDown } ?? true ? turn : turn * -1
        verdict = mending == .identity ? .agree : .disagree(mending)
    }
}
