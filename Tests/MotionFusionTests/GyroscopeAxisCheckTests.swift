import MotionCore
@testable import MotionFusion
import Testing

/// The gyroscope's axes against the accelerometer's, on simulated turns: the device's attitude q
/// (body to world) advances by its body rate ω, the accelerometer reads the world's up (1 g) in the
/// body frame, q⁻¹·up, and the gyroscope reads `mapping · ω` (a gyroscope mounted differently).
@Suite struct GyroscopeAxisCheckTests {
    /// The device tumbling (`tumble`), its accelerometer read with `noise` m/s² on each axis (uniform).
    static func verdict(mapping: Matrix3, noise: Double = 0) -> AxesVerdict? {
        var check = GyroscopeAxisCheck()
        let up = Vector3(x: 0, y: 0, z: Units.standardGravity)
        tumble(noise: noise, seed: 3) { q, ω, t, jitter in
            check.update(specificForce: q.conjugate.rotate(up) + jitter, rotationRate: mapping * ω, at: t)
            return check.verdict == nil
        }
        return check.verdict
    }

    @Test func aGyroscopeMountedAsItsAccelerometerAgrees() {
        #expect(Self.verdict(mapping: .identity) == .agree)
        // A phone accelerometer's noise, 0.1 m/s² a sample: judged per sample, this noise outweighed
        // the turning (a change of 0.012 rad a sample here) and chose a matrix.
        #expect(Self.verdict(mapping: .identity, noise: 0.1) == .agree)
    }

    /// Turned about the vertical only (lying on a table), the turning shows nothing of two axes:
    /// no verdict, however long, rather than a guess.
    @Test func turnsAboutTheVerticalAloneGiveNoVerdict() {
        var check = GyroscopeAxisCheck()
        for i in 1...3000 {
            check.update(specificForce: Vector3(x: 0, y: 0, z: Units.standardGravity), rotationRate: Vector3(x: 0, y: 0, z: 1.5), at: Int64(i) * 10_000_000)
        }
        #expect(check.verdict == nil)
    }

    /// Turns about slanted axes, each mostly about x or y with a little z: summed agreement took a
    /// gyroscope mounted right for one with z inverted here (that candidate predicts larger
    /// changes); the squared error of the prediction does not.
    @Test func turnsAboutSlantedAxesDoNotFoolIt() {
        var check = GyroscopeAxisCheck()
        var q = Quaternion(angle: 0.4, axis: Vector3(x: 1, y: 1, z: 0) * (1 / 2.0.squareRoot()))
        let up = Vector3(x: 0, y: 0, z: Units.standardGravity)
        var t: Int64 = 0
        let axes = [Vector3(x: 1, y: 0, z: 0.1), Vector3(x: 0.43, y: 0.9, z: -0.13), Vector3(x: -0.5, y: 0.8, z: 0.36)]
        // The little z needs long turning before it is told apart (until then, no verdict at all).
        for axis in Array(repeating: axes, count: 20).joined() {
            let ω = axis * (1.2 / axis.length)
            for _ in 0..<150 where check.verdict == nil {
                q = (q * Quaternion(angle: ω.length * 0.01, axis: ω * (1 / ω.length))).normalized
                t += 10_000_000
                check.update(specificForce: q.conjugate.rotate(up), rotationRate: ω, at: t)
            }
        }
        #expect(check.verdict == .agree)
    }

    /// x and y swapped and z inverted (a turn of the axes), and z inverted alone (a mirror image):
    /// the check gives the matrix that puts each back, the inverse of the mapping.
    @Test(arguments: [
        Matrix3(rowMajor: [0, 1, 0, 1, 0, 0, 0, 0, -1]),
        Matrix3(rowMajor: [1, 0, 0, 0, 1, 0, 0, 0, -1]),
        Matrix3(rowMajor: [0, -1, 0, 1, 0, 0, 0, 0, 1]),
    ])
    func aGyroscopeMappedDifferentlyIsCaughtWithTheMatrixThatMendsIt(mapping: Matrix3) {
        #expect(Self.verdict(mapping: mapping, noise: 0.1) == .disagree(mapping.transposed))
    }

    /// The matrix the check proposes, put between the gyroscope and the fusion, has the fused
    /// attitude follow a quarter turn about the vertical. The mapping cycles the axes (its gyroscope
    /// x reads the turn about z): unmended, the fusion takes the turn for a roll, and the mapping
    /// itself in place of its inverse would take it for a pitch.
    @Test func theMatrixItProposesHasTheFusedAttitudeFollowATurn() throws {
        let mapping = Matrix3(rowMajor: [0, 0, 1, 1, 0, 0, 0, 1, 0])
        guard case .disagree(let mending) = try #require(Self.verdict(mapping: mapping)) else {
            Issue.record("the mapping was not caught")
            return
        }
        func yawTurned(gyroscope: Matrix3) -> Double {
            var simulation = Simulation(useMagnetometer: false)
            simulation.gyroscopeMapping = gyroscope
            // Lying screen up, it turns 90° to the left about the vertical.
            simulation.hold(.identity, seconds: 1)
            let before = simulation.fusion.deviceMotion().attitude.yaw
            simulation.rotate(from: .identity, rate: Vector3(x: 0, y: 0, z: 1), seconds: .pi / 2)
            return degrees(wrapAngle(simulation.fusion.deviceMotion().attitude.yaw - before))
        }
        #expect(abs(yawTurned(gyroscope: mending * mapping) - 90) < 2)
        #expect(abs(yawTurned(gyroscope: mapping) - 90) > 45, "unmended")
        #expect(abs(yawTurned(gyroscope: mapping * mapping) - 90) > 45, "mended the wrong way round")
    }
}

/// Tablet mode from the hinge angle: on at 210°, off at 190°, held while the display lies flat.
@Suite struct TabletModePolicyTests {
    @Test func theSwitchFollowsTheHingeWithAMarginAndHoldsWhileLyingFlat() {
        var policy = TabletModePolicy()
        let steps: [(angle: Double, flat: Bool, change: Bool?)] = [
            (120, false, nil), (205, false, nil), (210, false, true), (250, false, nil), (195, false, nil), (190, false, false),
            (300, true, nil), (150, true, nil), (300, false, true),
        ]
        for step in steps {
            #expect(policy.update(angle: step.angle, displayFlat: step.flat) == step.change, "at \(step.angle)° flat \(step.flat)")
        }
    }
}
