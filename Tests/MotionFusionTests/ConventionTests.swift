import MotionCore
import Testing

@testable import MotionFusion

/// CoreMotion's signs and ranges, on worked examples (docs/frames.md explains each).
@Suite struct ConventionTests {
    /// A device held still in `attitude` (device → ENU) for ten seconds, then its motion.
    func still(_ attitude: Quaternion, frame: AttitudeReferenceFrame = .xArbitraryZVertical) -> DeviceMotion {
        var simulation = Simulation()
        simulation.hold(attitude, seconds: 10)
        return simulation.fusion.deviceMotion(in: frame)
    }

    func expectClose(_ a: Vector3, _ b: Vector3, within tolerance: Double = 1e-3, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect((a - b).length <= tolerance, "\(a) vs \(b)", sourceLocation: sourceLocation)
    }

    @Test func faceUpAtRestReadsMinusOneGOnZ() {
        let motion = still(.identity)
        expectClose(motion.gravity, Vector3(x: 0, y: 0, z: -1))
        expectClose(motion.userAcceleration, .zero)
        #expect(abs(motion.attitude.pitch) < 1e-3 && abs(motion.attitude.roll) < 1e-3)
        // The rotation matrix's third column is up in device coordinates.
        expectClose(motion.attitude.rotationMatrix * Vector3(x: 0, y: 0, z: 1), Vector3(x: 0, y: 0, z: 1))
    }

    @Test func faceDownHasGravityUpAndRollOfHalfATurn() {
        let motion = still(turn(180, about: .y))
        expectClose(motion.gravity, Vector3(x: 0, y: 0, z: 1))
        #expect(abs(abs(motion.attitude.roll) - .pi) < 1e-3)
        #expect(abs(motion.attitude.pitch) < 1e-3)
    }

    @Test func portraitUprightPitchesUpNinetyDegrees() {
        let motion = still(turn(90, about: .x))  // top edge up, screen facing south
        expectClose(motion.gravity, Vector3(x: 0, y: -1, z: 0))
        #expect(abs(degrees(motion.attitude.pitch) - 90) < 0.1)
    }

    @Test func landscapeWithTheRightEdgeUpRollsMinusNinety() {
        let motion = still(turn(-90, about: .y))  // the right edge up
        expectClose(motion.gravity, Vector3(x: -1, y: 0, z: 0))
        #expect(abs(degrees(motion.attitude.roll) + 90) < 0.1)
        let other = still(turn(90, about: .y))  // the left edge up
        expectClose(other.gravity, Vector3(x: 1, y: 0, z: 0))
        #expect(abs(degrees(other.attitude.roll) - 90) < 0.1)
    }

    @Test(arguments: [89.0, -89.0, 88.0])
    func pitchNearVerticalStaysInRange(pitch: Double) {
        let motion = still(turn(pitch, about: .x))
        #expect(abs(degrees(motion.attitude.pitch) - pitch) < 0.1)
        #expect(abs(motion.attitude.pitch) <= .pi / 2)
    }

    @Test(arguments: [(Axis.x, 90.0), (.y, 90.0), (.z, 90.0), (.z, -90.0)])
    func ninetyDegreeTurnsAboutEachAxisShowInTheEulerAngle(axis: Axis, angle: Double) {
        var simulation = Simulation(useMagnetometer: false)
        simulation.hold(.identity, seconds: 3)
        var omega = Vector3.zero
        omega[axis] = angle * .pi / 180  // the turn takes one second
        let end = simulation.rotate(from: .identity, rate: omega, seconds: 1)
        simulation.hold(end, seconds: 0.01)
        let attitude = simulation.fusion.deviceMotion().attitude
        let measured = switch axis {
        case .x: attitude.pitch
        case .y: attitude.roll
        case .z: attitude.yaw
        }
        #expect(abs(degrees(measured) - angle) < 0.5, "\(axis): \(degrees(measured))°")
        #expect(attitude.quaternion.angle(to: end) < 0.5 * .pi / 180)
    }

    @Test func gravityAndUserAccelerationSignsDuringALinearPush() {
        var fusion = SensorFusion(gyroscopeRate: 100)
        // Face up, pushed toward the top edge (+y) at 0.5 g for a moment: the specific force gains +y.
        for i in 0..<1000 {
            let push = i >= 990 ? 0.5 * Units.standardGravity : 0
            let t = Int64(i) * 10_000_000
            fusion.update(SensorSample(kind: .gyroscope, device: DeviceNumber(0), timestamp: t, vector: .zero))
            fusion.update(SensorSample(kind: .accelerometer, device: DeviceNumber(0), timestamp: t, vector: Vector3(x: 0, y: push, z: Units.standardGravity)))
        }
        let motion = fusion.deviceMotion()
        #expect(abs(motion.gravity.z + 1) < 1e-3)
        // CoreMotion: acceleration = −specific force / g, so a push toward +y reads −0.5 g on y.
        #expect(abs(motion.userAcceleration.y + 0.5) < 0.01)
        #expect(abs(motion.userAcceleration.z) < 0.01)
    }

    @Test func northFramesPointXToNorthAndGiveTheHeadingOfTheTopEdge() {
        // Flat, face up, top edge pointing north: in ENU that is the identity.
        let north = still(.identity, frame: .xMagneticNorthZVertical)
        #expect(abs(north.heading! - 0) < 0.5 || abs(north.heading! - 360) < 0.5)
        #expect(abs(degrees(north.attitude.yaw) + 90) < 0.5, "x points east, 90° clockwise of north: yaw −90°")
        // Top edge pointing east: turned −90° about up.
        let east = still(turn(-90, about: .z), frame: .xMagneticNorthZVertical)
        #expect(abs(east.heading! - 90) < 0.5)
        #expect(abs(abs(degrees(east.attitude.yaw)) - 180) < 0.5, "x points south: yaw ±180°")
        #expect(still(.identity, frame: .xArbitraryZVertical).heading == nil)
    }

    @Test func trueNorthAddsTheDeclination() {
        var simulation = Simulation(declination: 10)  // magnetic north is 10° east of true north
        simulation.hold(.identity, seconds: 10)  // top edge to magnetic north
        let magnetic = simulation.fusion.deviceMotion(in: .xMagneticNorthZVertical).heading!
        let truth = simulation.fusion.deviceMotion(in: .xTrueNorthZVertical).heading!
        #expect(abs(truth - (magnetic + 10).truncatingRemainder(dividingBy: 360)) < 1e-6)
        #expect(abs(truth - 10) < 0.5)
    }

    @Test func multiplyByInverseOfGivesTheChangeSinceTheReference() {
        let reference = Attitude(quaternion: turn(30, about: .z))
        var current = Attitude(quaternion: turn(30, about: .z) * turn(20, about: .x))
        current.multiply(byInverseOf: reference)
        #expect(abs(degrees(current.pitch) - 20) < 1e-9)
        #expect(abs(current.yaw) < 1e-9 && abs(current.roll) < 1e-9)
        #expect(reference.multiplied(byInverseOf: reference).quaternion.angle(to: .identity) < 1e-9)
    }

    @Test func arbitraryFramesStartNearZeroYaw() {
        var simulation = Simulation()
        simulation.hold(turn(-60, about: .z), seconds: 15)
        #expect(abs(simulation.fusion.deviceMotion(in: .xArbitraryZVertical).attitude.yaw) < 1e-3)
        #expect(abs(simulation.fusion.deviceMotion(in: .xArbitraryCorrectedZVertical).attitude.yaw) < 0.01)
    }
}
