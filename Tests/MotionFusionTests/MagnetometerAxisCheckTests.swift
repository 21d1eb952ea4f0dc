import MotionCore
import MotionFusion
import Testing

/// The magnetometer's axes against the gyroscope's, on simulated turns: the device's attitude q
/// (body to world) advances by its body rate ω, the gyroscope reads ω, and the magnetometer reads
/// `mapping` times the Earth's field (19 µT north, 46 µT down) in the body frame, q⁻¹·B.
@Suite struct MagnetometerAxisCheckTests {
    /// The device tumbling (`tumble`), its magnetometer read with `noise` µT on every axis (uniform).
    static func verdict(
        mapping: Matrix3, noise: Double = 0, fieldPointsDown: Bool? = true, earth: Vector3 = Vector3(x: 0, y: 19, z: -46)
    ) -> AxesVerdict? {
        var check = MagnetometerAxisCheck()
        check.fieldPointsDown = fieldPointsDown
        tumble(noise: noise, seed: 7) { q, ω, t, jitter in
            let up = q.conjugate.rotate(Vector3(x: 0, y: 0, z: 1))
            check.update(field: mapping * q.conjugate.rotate(earth) + jitter, rotationRate: ω, specificForce: up, at: t)
            return check.verdict == nil
        }
        return check.verdict
    }

    @Test func aMagnetometerMountedAsTheGyroscopeAgrees() {
        #expect(Self.verdict(mapping: .identity) == .agree)
        // A consumer magnetometer's noise (0.5 µT a sample) changes nothing.
        #expect(Self.verdict(mapping: .identity, noise: 0.5) == .agree)
    }

    /// A chip on the back of a phone read as if on the front (x and z inverted: a half turn about y),
    /// x and y swapped with z inverted, and z alone inverted (a mirror image): the check gives the
    /// matrix that puts each back, the inverse of the mapping.
    @Test(arguments: [
        Matrix3(rowMajor: [-1, 0, 0, 0, 1, 0, 0, 0, -1]),
        Matrix3(rowMajor: [0, 1, 0, 1, 0, 0, 0, 0, -1]),
        Matrix3(rowMajor: [1, 0, 0, 0, 1, 0, 0, 0, -1]),
        Matrix3(rowMajor: [0, 0, 1, 1, 0, 0, 0, 1, 0]),
    ])
    func aMagnetometerMappedDifferentlyIsCaughtWithTheMatrixThatMendsIt(mapping: Matrix3) {
        #expect(Self.verdict(mapping: mapping, noise: 0.5) == .disagree(mapping.transposed))
    }

    /// Where the hemisphere is not known, a turn of the axes is still caught (the mirror image of the
    /// mending matrix turns the field the same way, and is told apart as no turn); a mirror image
    /// is then taken for its turned opposite, which the place's dip settles (above).
    @Test func withoutThePlaceAMendingTurnIsToldFromItsMirrorImage() {
        let halfTurn = Matrix3(rowMajor: [-1, 0, 0, 0, 1, 0, 0, 0, -1])
        #expect(Self.verdict(mapping: halfTurn, noise: 0.5, fieldPointsDown: nil) == .disagree(halfTurn.transposed))
        #expect(Self.verdict(mapping: .identity, noise: 0.5, fieldPointsDown: nil) == .agree)
    }

    /// South of the magnetic equator the field points up (Sydney: 24 µT north, 52 µT up): told so,
    /// the check reads the dip the other way round and still finds the matrix that mends.
    @Test func inTheSouthTheDipIsReadTheOtherWayRound() {
        let inverted = Matrix3(rowMajor: [1, 0, 0, 0, 1, 0, 0, 0, -1])
        let sydney = Vector3(x: 0, y: 24, z: 52)
        #expect(Self.verdict(mapping: inverted, noise: 0.5, fieldPointsDown: false, earth: sydney) == .disagree(inverted))
        #expect(Self.verdict(mapping: .identity, noise: 0.5, fieldPointsDown: false, earth: sydney) == .agree)
    }

    /// Held still, or turned too slowly, there is no evidence and no verdict.
    @Test func noTurningGivesNoVerdict() {
        var check = MagnetometerAxisCheck()
        for i in 1...1000 {
            check.update(field: Vector3(x: 0, y: 19, z: -46), rotationRate: Vector3(x: 0.1, y: 0, z: 0), specificForce: Vector3(x: 0, y: 0, z: 9.8), at: Int64(i) * 10_000_000)
        }
        #expect(check.verdict == nil)
    }
}

