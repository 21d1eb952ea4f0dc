import Foundation
import MotionCore
import Testing

@testable import MotionFusion

/// What the fusion core does over time: bias, rates, magnetic disturbances, calibration, state.
@Suite struct BehaviourTests {
    @Test func atRestTheBiasEstimateConvergesToAnInjectedBias() {
        var simulation = Simulation(useMagnetometer: false)
        simulation.noiseLevel = 1
        simulation.gyroscopeBias = Vector3(x: 0.01, y: -0.02, z: 0.005)  // 0.57, −1.15, 0.29 °/s
        simulation.hold(turn(20, about: .x), seconds: 30)
        let estimate = simulation.fusion.filter.gyroscopeBias
        #expect((estimate - simulation.gyroscopeBias).length < 1e-4, "\(estimate)")  // 0.006 °/s
        #expect(simulation.fusion.filter.isResting)
        simulation.noiseLevel = 0
        simulation.hold(turn(20, about: .x), seconds: 0.01)
        #expect(simulation.fusion.deviceMotion().rotationRate.length < 1e-4, "the bias is removed from the rate")
    }

    /// A player easing the camera round: 0.5 °/s about the vertical after the bias was learnt at rest.
    /// Such a turn passes the 2 °/s rest tests; unless the rest detector also asks the bias-corrected
    /// rate to be near zero, it is learnt as bias (27 % of it kept before, on BROAD's rest phases with
    /// the same turn added: `scripts/gyro-calibration-figures`).
    @Test func aSlowTurnAboutTheVerticalAfterCalibrationIsNotLearntAsBias() {
        var simulation = Simulation(useMagnetometer: false)
        simulation.noiseLevel = 1
        simulation.gyroscopeBias = Vector3(x: 0.01, y: -0.02, z: 0.005)
        simulation.hold(.identity, seconds: 10)
        let start = simulation.fusion.filter.attitudeWithoutMagnetometer
        let rate = 0.5 * .pi / 180
        _ = simulation.rotate(from: .identity, rate: Vector3(x: 0, y: 0, z: rate), seconds: 60)
        let end = simulation.fusion.filter.attitudeWithoutMagnetometer
        let turned = degrees(2 * atan2((end * start.conjugate).z, (end * start.conjugate).w))
        #expect(abs(turned - 30) < 1, "turned \(turned)° of 30°")
        #expect(abs(simulation.fusion.filter.gyroscopeBias.z - 0.005) < 0.05 * .pi / 180, "the bias kept its vertical component")
    }

    @Test func turningAboutTiltedAxesTeachesTheGyroscopesScaleErrors() {
        // A gyroscope whose axes read 0.5 % low, 0.4 % high and 0.2 % low, with a bias and noise.
        func run(estimatingScale: Bool) -> (scale: Vector3, worstTilt: Double) {
            var parameters = OrientationFilter.Parameters()
            parameters.estimatesGyroscopeScale = estimatingScale
            var simulation = Simulation(useMagnetometer: false, parameters: parameters)
            simulation.noiseLevel = 1
            simulation.gyroscopeSensitivity = Vector3(x: 0.995, y: 1.004, z: 0.998)
            simulation.gyroscopeBias = Vector3(x: 0.003, y: -0.002, z: 0.001)
            simulation.hold(.identity, seconds: 5)
            var q = Quaternion.identity
            var worstTilt = 0.0
            // Ordinary handling: turns about axes that take every device axis through the horizontal.
            let axes = [Vector3(x: 0.6, y: 0.3, z: 1), Vector3(x: -1, y: 0.5, z: 0.2), Vector3(x: 0.2, y: -1, z: 0.6), Vector3(x: 1, y: 1, z: -0.4)]
            for round in 0..<24 {
                for axis in axes { q = simulation.rotate(from: q, rate: axis * (2 / axis.length), seconds: 2.5) }
                guard round >= 20 else { continue }
                let estimate = simulation.fusion.filter.attitudeWithoutMagnetometer
                let up = Vector3(x: 0, y: 0, z: 1)
                let tilt = acos(min(1, q.conjugate.rotate(up).dot(estimate.conjugate.rotate(up))))
                worstTilt = max(worstTilt, tilt * 180 / .pi)
            }
            return (simulation.fusion.filter.gyroscopeScale, worstTilt)
        }
        let learnt = run(estimatingScale: true)
        let expected = Vector3(x: 1 / 0.995 - 1, y: 1 / 1.004 - 1, z: 1 / 0.998 - 1)  // raw × (1 + scale) = true
        // After four minutes of turning the estimate is within a fifth of the injected error.
        #expect((learnt.scale - expected).length < 0.0012, "learnt \(learnt.scale), expected \(expected)")
        let biasOnly = run(estimatingScale: false)
        #expect(biasOnly.scale == .zero)
        #expect(learnt.worstTilt < biasOnly.worstTilt / 3,  "tilt error \(learnt.worstTilt)° with the scale learnt, \(biasOnly.worstTilt)° without")
    }

    @Test func aNonFiniteSampleIsIgnoredAndLeavesTheStateAsItWas() {
        var simulation = Simulation()
        simulation.noiseLevel = 1
        simulation.rotate(from: .identity, rate: Vector3(x: 0.3, y: -0.2, z: 0.5), seconds: 3)
        var fed = simulation.fusion
        for kind in [SensorKind.gyroscope, .accelerometer, .magnetometer] {
            // The last: finite components whose square overflows (a remote iiod's garbage scale), which
            // made the disturbance detector's low-passed field infinite, then NaN for good.
            for bad in [Vector3(x: .nan, y: 0, z: 0), Vector3(x: 0, y: .infinity, z: 0), Vector3(x: 0, y: 0, z: -.infinity), Vector3(x: 1e200, y: 0, z: 0)] {
                fed.update(SensorSample(kind: kind, device: DeviceNumber(0), timestamp: simulation.time + 1, vector: bad))
            }
        }
        #expect(fed == simulation.fusion)
    }

    @Test func aConstantRotationGivesTheRightYawRate() {
        var simulation = Simulation(useMagnetometer: false)
        simulation.hold(.identity, seconds: 2)
        let before = simulation.fusion.deviceMotion().attitude.yaw
        simulation.rotate(from: .identity, rate: Vector3(x: 0, y: 0, z: 0.5), seconds: 2)  // 1 rad
        let after = simulation.fusion.deviceMotion().attitude.yaw
        #expect(abs(wrapAngle(after - before) - 1.0) < 1e-3)
    }

    @Test func aMagnetSwitchedOnNearTheDeviceLeavesTheHeadingWithinTwoDegrees() {
        var simulation = Simulation()
        simulation.noiseLevel = 1
        // Turning for a while teaches the filter the undisturbed field's strength and dip.
        let start = simulation.rotate(from: .identity, rate: Vector3(x: 0, y: 0, z: -0.5), seconds: 8)
        simulation.rotate(from: start, rate: Vector3(x: 0, y: 0, z: 0.5), seconds: 8 - Double.pi / 6 / 0.5)
        simulation.hold(turn(-30, about: .z), seconds: 10)
        let before = simulation.fusion.deviceMotion(in: .xMagneticNorthZVertical).heading!
        // A magnet beside the device adds 40 µT pointing east (fixed in the room) for 30 s.
        simulation.hold(turn(-30, about: .z), seconds: 30, extraField: Vector3(x: 40, y: 0, z: 0))
        let during = simulation.fusion.deviceMotion(in: .xMagneticNorthZVertical).heading!
        #expect(simulation.fusion.filter.isMagneticFieldDisturbed)
        #expect(abs(before - 30) < 1)
        #expect(abs(during - before) < 2, "heading moved from \(before)° to \(during)°")
    }

    @Test func aMagnetAttachedToTheDeviceIsLearntAsHardIron() {
        var simulation = Simulation()
        simulation.noiseLevel = 1
        simulation.magnetometerOffset = Vector3(x: 25, y: -10, z: 40)
        var q = Quaternion.identity
        // Ordinary motion: turns about a tilted axis, so the readings cover the sphere.
        for (i, axis) in [Vector3(x: 0.6, y: 0.3, z: 1), Vector3(x: -1, y: 0.5, z: 0.2), Vector3(x: 0.2, y: -1, z: 0.6)].enumerated() {
            q = simulation.rotate(from: q, rate: axis * (1.5 / axis.length), seconds: 4 + Double(i))
        }
        let calibrator = simulation.fusion.calibrator
        #expect((calibrator.offset - simulation.magnetometerOffset).length < 1, "\(calibrator.offset)")
        #expect(abs(calibrator.radius - simulation.earthField.length) < 1)
        #expect(calibrator.accuracy >= .medium)
        let field = simulation.fusion.deviceMotion().magneticField
        #expect(abs(field.length - simulation.earthField.length) < 1.5)
    }

    /// A calibrated device turning on and nodding gets a magnet (the offset moves by 30 µT) and, 2 to
    /// 5 s later, before that was fitted, it is moved (25 µT more): the hard-iron window then holds two
    /// spheres. The sphere alone adopted fits between them, 4.4 and 7.7 µT from either offset (moved
    /// after 2 and 2.5 s); the earth frame's estimate, from the same window with the gyroscope's
    /// attitude, does not agree with such a fit. Every offset adopted is within 2 µT of one the
    /// readings had (with two estimates made always to agree, 4.4 µT off: the control), and the last
    /// one is learnt within 9 s of the move (the window, of time constant
    /// 5 s, must first forget the mixed readings; with the sphere alone and a spread check 7.3–7.9 s).
    @Test func aMagnetMovedBeforeItsFitIsNotFittedAsAMixOfTwoOffsets() {
        func run(movedAfter delay: Double, parameters: MagnetometerCalibrator.Parameters = .init()) -> (worst: Double, learnt: Double?) {
            var simulation = Simulation()
            simulation.fusion = SensorFusion(gyroscopeRate: 100, calibration: parameters)
            simulation.noiseLevel = 1
            let initial = Vector3(x: 20, y: -10, z: 5)
            let attached = initial + Vector3(x: 30, y: 0, z: 0), moved = attached + Vector3(x: 0, y: -25, z: 10)
            simulation.fusion.restore(SensorFusion.Calibration(
                gyroscopeBias: .zero, gyroscopeBiasSigma: 0.001, magnetometerOffset: initial, magnetometerOffsetError: 0.3,
                fieldStrength: simulation.earthField.length))
            // Turning at 1.5 rad/s about the vertical while nodding between upright and 144° over.
            func path(_ t: Double) -> Quaternion {
                turn(1.5 * t * 180 / .pi, about: .z) * turn((1 - cos(2 * Double.pi * t / 8)) * 72, about: .y)
            }
            simulation.hold(path(0), seconds: 1)
            var worst = 0.0
            var learnt: Double?
            var t = 0.0
            while t < 22 {
                simulation.magnetometerOffset = t < 4 ? initial : (t < 4 + delay ? attached : moved)
                let before = simulation.fusion.calibrator.offset
                simulation.follow(path, from: t, seconds: 0.2)
                t += 0.2
                let now = simulation.fusion.calibrator.offset
                if now != before { worst = max(worst, min((now - initial).length, (now - attached).length, (now - moved).length)) }
                if learnt == nil, t > 4 + delay, (now - moved).length < 2 { learnt = t - 4 - delay }
            }
            return (worst, learnt)
        }
        // The control: two estimates that always agree (an infinite significance) leave the sphere alone.
        var agreeing = MagnetometerCalibrator.Parameters()
        agreeing.significance = .infinity
        var worstWithoutAgreement = 0.0
        for delay in stride(from: 2.0, through: 5.0, by: 0.5) {
            let result = run(movedAfter: delay)
            #expect(result.worst < 2, "moved after \(delay) s: worst offset adopted \(result.worst) µT")
            #expect(result.learnt.map { $0 <= 9 } ?? false, "moved after \(delay) s: learnt after \(String(describing: result.learnt)) s")
            worstWithoutAgreement = max(worstWithoutAgreement, run(movedAfter: delay, parameters: agreeing).worst)
        }
        #expect(worstWithoutAgreement > 4, "without the agreement, the worst offset adopted: \(worstWithoutAgreement) µT")
    }

    @Test func sensorsAtDifferentRatesAreEachFusedOnTheirOwnTimestamps() {
        // Gyroscope 400 Hz, accelerometer 100 Hz, magnetometer 25 Hz, interleaved by time, turning
        // at 0.4 rad/s about a tilted axis for 10 s after 5 s of rest.
        var fusion = SensorFusion(gyroscopeRate: 400, accelerometerRate: 100, magnetometerRate: 25)
        let axis = Vector3(x: 0.2, y: -0.4, z: 0.9) * (1 / Vector3(x: 0.2, y: -0.4, z: 0.9).length)
        let field = Vector3(x: 0, y: 19, z: -46)
        func truth(_ t: Double) -> Quaternion { t < 5 ? .identity : Quaternion(angle: 0.4 * (t - 5), axis: axis) }
        var events: [(Double, SensorKind)] = []
        for i in 0..<6000 { events.append((Double(i) / 400, .gyroscope)) }
        for i in 0..<1500 { events.append((Double(i) / 100 + 0.0013, .accelerometer)) }
        for i in 0..<375 { events.append((Double(i) / 25 + 0.0021, .magnetometer)) }
        events.sort { $0.0 < $1.0 }
        for (t, kind) in events {
            let toDevice = truth(t).conjugate
            let vector = switch kind {
            case .gyroscope: t < 5 ? Vector3.zero : axis * 0.4
            case .accelerometer: toDevice.rotate(Vector3(x: 0, y: 0, z: Units.standardGravity))
            default: toDevice.rotate(field)
            }
            fusion.update(SensorSample(kind: kind, device: DeviceNumber(0), timestamp: Int64(t * 1e9), vector: vector))
        }
        let error = fusion.filter.attitude.angle(to: truth(14.9975))
        #expect(degrees(error) < 0.5, "error \(degrees(error))°")
    }

    @Test func uncalibratedUntilTheDeviceHasMoved() {
        var simulation = Simulation()
        simulation.hold(.identity, seconds: 10)
        #expect(simulation.fusion.deviceMotion().magneticFieldAccuracy == .uncalibrated)
    }

    @Test func savingAndRestoringHalfwayGivesExactlyTheSameResult() throws {
        let samples = try BROADSlice.load().samples
        var straight = SensorFusion(gyroscopeRate: 285.714)
        for s in samples { straight.update(s) }

        var first = SensorFusion(gyroscopeRate: 285.714)
        for s in samples[..<(samples.count / 2)] { first.update(s) }
        let saved = try JSONEncoder().encode(first)
        var second = try JSONDecoder().decode(SensorFusion.self, from: saved)
        #expect(second == first)
        for s in samples[(samples.count / 2)...] { second.update(s) }

        #expect(second == straight)
        #expect(second.filter.attitude == straight.filter.attitude)
        #expect(second.deviceMotion(in: .xMagneticNorthZVertical) == straight.deviceMotion(in: .xMagneticNorthZVertical))
    }

    @Test func aRestoredCalibrationStartsWhereTheOldOneWas() {
        var simulation = Simulation(useMagnetometer: false)
        simulation.gyroscopeBias = Vector3(x: 0.01, y: -0.02, z: 0.005)
        simulation.hold(.identity, seconds: 30)
        let learnt = simulation.fusion.calibration
        // A new instance at another rate starts from it: the rotation rate is bias-free at once.
        var fresh = SensorFusion(gyroscopeRate: 200)
        fresh.restore(learnt)
        fresh.update(SensorSample(kind: .gyroscope, device: DeviceNumber(0), timestamp: 1, vector: simulation.gyroscopeBias))
        #expect(fresh.deviceMotion().rotationRate.length < 1e-4)
        #expect(fresh.calibration == learnt)
    }

    /// An accuracy regression on 45 s of a real recording (BROAD trial 24, tapping), against its
    /// optical ground truth. Today: total 0.905°, inclination 0.510°; the bounds sit within 10 % above.
    @Test func accuracyOnARealRecordingDoesNotRegress() throws {
        let slice = try BROADSlice.load()
        var fusion = SensorFusion(gyroscopeRate: 285.714)
        var squaredTotal = 0.0, squaredInclination = 0.0, count = 0.0
        for (i, row) in slice.imu.rows.enumerated() {
            let t = row.timestamp
            fusion.update(SensorSample(kind: .gyroscope, device: DeviceNumber(0), timestamp: t, vector: row.gyroscope))
            fusion.update(SensorSample(kind: .accelerometer, device: DeviceNumber(0), timestamp: t, vector: row.accelerometer))
            fusion.update(SensorSample(kind: .magnetometer, device: DeviceNumber(0), timestamp: t, vector: row.magnetometer!))
            guard let truth = slice.truth[i] else { continue }
            let estimate = fusion.filter.attitude
            let total = estimate.angle(to: truth)
            // Inclination error: the angle between the estimated and true "up" in the device frame.
            let up = Vector3(x: 0, y: 0, z: 1)
            let cosine = estimate.conjugate.rotate(up).dot(truth.conjugate.rotate(up))
            let inclination = acos(min(1, max(-1, cosine)))
            squaredTotal += total * total
            squaredInclination += inclination * inclination
            count += 1
        }
        let total = degrees((squaredTotal / count).squareRoot())
        let inclination = degrees((squaredInclination / count).squareRoot())
        #expect(count > 4000)
        #expect(total < 0.99, "total RMSE \(total)°")
        #expect(inclination < 0.56, "inclination RMSE \(inclination)°")
    }
}

/// Seconds 15–60 of BROAD trial 24 (see Fixtures/README.md for the credit line).
struct BROADSlice {
    var imu: IMUTable
    /// Ground truth per IMU row during movement (nil at rest or where the cameras lost the IMU).
    var truth: [Quaternion?]

    var samples: [SensorSample] {
        imu.rows.flatMap { row in
            [SensorSample(kind: .gyroscope, device: DeviceNumber(0), timestamp: row.timestamp, vector: row.gyroscope),
             SensorSample(kind: .accelerometer, device: DeviceNumber(0), timestamp: row.timestamp, vector: row.accelerometer),
             SensorSample(kind: .magnetometer, device: DeviceNumber(0), timestamp: row.timestamp, vector: row.magnetometer!)]
        }
    }

    static func load() throws -> BROADSlice {
        func text(_ name: String) throws -> String {
            let url = try #require(Bundle.module.url(forResource: name, withExtension: "csv", subdirectory: "Fixtures"))
            return try String(contentsOf: url, encoding: .utf8)
        }
        let imu = try IMUTable(csv: text("broad-24-tapping-slice_imu"))
        let truth: [Quaternion?] = try text("broad-24-tapping-slice_gt").split(whereSeparator: \.isNewline).dropFirst().map { line in
            let v = line.split(separator: ",").map { Double($0) ?? .nan }
            guard v.count == 6, v[5] == 1, !v[1].isNaN else { return nil }
            return Quaternion(w: v[1], x: v[2], y: v[3], z: v[4])
        }
        precondition(truth.count == imu.rows.count)
        return BROADSlice(imu: imu, truth: truth)
    }
}
