import MotionCore
import Testing

@testable import MotionFusion

/// The heading correction's bounded influence (`OrientationFilter.Parameters.headingErrorLimit`): a
/// field that is not the Earth's, let through before anything can tell, moves the heading by at most
/// the limit's share.
@Suite struct HeadingErrorLimitTests {
    /// A device whose heading converged at rest for 10 s (100 Hz) gets a magnet attached (a
    /// body-fixed 40 µT, as BROAD's 1 cm magnet trial) and turns for 1.5 s: before its hard-iron fit,
    /// its magnetometer reads fields up to 2 rad off north. Returns how far the heading correction
    /// moved meanwhile and the angle between the estimated and the true attitude at the end, °.
    private func afterAMagnetIsAttached(limit: Double) -> (headingMoved: Double, error: Double) {
        var parameters = OrientationFilter.Parameters()
        parameters.headingErrorLimit = limit
        var simulation = Simulation(parameters: parameters)
        simulation.noiseLevel = 1
        simulation.hold(.identity, seconds: 10)
        let before = simulation.fusion.filter.headingCorrection
        simulation.magnetometerOffset = Vector3(x: 30, y: -20, z: 20)
        let axis = Vector3(x: 0.3, y: -0.5, z: 1)
        let end = simulation.rotate(from: .identity, rate: axis * (1.2 / axis.length), seconds: 1.5)
        #expect(simulation.fusion.calibrator.offsetError == nil, "the hard iron is not fitted yet")
        let filter = simulation.fusion.filter
        return (degrees(abs(wrapAngle(filter.headingCorrection - before))), degrees(filter.attitude.angle(to: end)))
    }

    @Test func aMagnetAttachedBeforeItsHardIronFitMovesTheHeadingLittle() {
        let limited = afterAMagnetIsAttached(limit: 0.1)
        // Samples 1001…1150 of the first convergence, gain 1/n, each pulling by at most 0.1 rad:
        // 0.1 · Σ 1/n = 0.80°. Each did: the magnet pulls by more.
        let bound = degrees(0.1 * (1001...1150).reduce(0.0) { $0 + 1 / Double($1) })
        #expect(limited.headingMoved <= bound + 1e-9, "moved \(limited.headingMoved)°, bound \(bound)°")
        #expect(limited.error < 1, "\(limited.error)°")
        // The same input without the limit: the magnet's field drags the heading along.
        let unlimited = afterAMagnetIsAttached(limit: .infinity)
        #expect(unlimited.error > 5, "\(unlimited.error)°")
    }

    /// A polled magnetometer read between a scan's accelerometer and gyroscope, at start: its first
    /// field comes before any tilt is known (the accelerometer waits for the gyroscope's instant). A
    /// device lying still, tilted 30°, facing 70° east of north, 3 s at 100 Hz, the field at 25 Hz.
    /// Taken whole through the wrong tilt, that field set the heading 30–40° off, which the limit
    /// then corrected at its pace: 33° off after 3 s in the daemon's test (`MachineClasses`).
    @Test func aFieldSeenBeforeTheTiltIsKnownDoesNotSetTheHeading() {
        var fusion = SensorFusion(gyroscopeRate: 100)
        let truth = Quaternion(angle: -70 * .pi / 180, axis: Vector3(x: 0, y: 0, z: 1)) * turn(-30, about: .x)
        let toDevice = truth.conjugate
        let force = toDevice.rotate(Vector3(x: 0, y: 0, z: Units.standardGravity))
        let field = toDevice.rotate(Vector3(x: 0, y: 19, z: -46))
        for k in 0..<300 {
            let time = Int64(k + 1) * 10_000_000
            fusion.update(SensorSample(kind: .accelerometer, device: DeviceNumber(0), timestamp: time, vector: force))
            if k % 4 == 0 { fusion.update(SensorSample(kind: .magnetometer, device: DeviceNumber(0), timestamp: time, vector: field)) }
            fusion.update(SensorSample(kind: .gyroscope, device: DeviceNumber(0), timestamp: time, vector: .zero))
        }
        let error = degrees(fusion.filter.attitude.angle(to: truth))
        #expect(error < 0.5, "\(error)°")
    }
}
