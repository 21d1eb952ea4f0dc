import MotionCore
import Testing

@testable import MotionFusion

/// The heading correction's bounded influence (`OrientationFilter.Parameters.headingErrorLimit`): a
/// field that is not the Earth's, let through before anything can tell, moves the heading by at most
/// the limit's share. The reference is the simulation's true attitude.
@Suite struct HeadingErrorLimitTests {
    /// The angle between the estimated and the true attitude, °, after a device whose heading
    /// converged at rest for 10 s gets a magnet attached (a body-fixed 40 µT, as BROAD's 1 cm magnet
    /// trial) and turns for 1.5 s: before its hard-iron fit, its magnetometer reads fields up to 2 rad
    /// off north.
    private func errorAfterAMagnetIsAttached(limit: Double) -> Double {
        var parameters = OrientationFilter.Parameters()
        parameters.headingErrorLimit = limit
        var simulation = Simulation(parameters: parameters)
        simulation.noiseLevel = 1
        simulation.hold(.identity, seconds: 10)
        simulation.magnetometerOffset = Vector3(x: 30, y: -20, z: 20)
        let axis = Vector3(x: 0.3, y: -0.5, z: 1)
        let end = simulation.rotate(from: .identity, rate: axis * (1.2 / axis.length), seconds: 1.5)
        #expect(simulation.fusion.calibrator.offsetError == nil, "the hard iron is not fitted yet")
        return degrees(simulation.fusion.filter.attitude.angle(to: end))
    }

    @Test func aMagnetAttachedBeforeItsHardIronFitMovesTheHeadingLittle() {
        let limited = errorAfterAMagnetIsAttached(limit: 0.1)
        // The bound: 1000 samples at rest, then 150 with the first convergence's gain 1/n, each pulling
        // by at most 0.1 rad: 0.1 · Σ 1/n for n = 1001…1150 = 0.80°; 0.5° more for the inclination's.
        let bound = degrees(0.1 * (1001...1150).reduce(0.0) { $0 + 1 / Double($1) }) + 0.5
        #expect(limited < bound, "limited: \(limited)°, bound \(bound)°")
        // The same input without the limit: the magnet's field drags the heading along.
        let unlimited = errorAfterAMagnetIsAttached(limit: 0)
        #expect(unlimited > 4 * limited, "unlimited: \(unlimited)°, limited: \(limited)°")
    }
}
