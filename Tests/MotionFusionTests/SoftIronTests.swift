import Foundation
import MotionCore
import Testing

@testable import MotionFusion

@Suite struct SoftIronTests {
    /// Hard-iron-corrected readings of a 45 µT field seen from directions spread over the sphere
    /// (a golden-angle spiral, revisited every `cycle` readings), distorted by `distortion`, with noise.
    static func readings(count: Int, distortion: Matrix3, plane: Bool = false, noise: Double = 0.3) -> [Vector3] {
        var random = SeededNoise(seed: 7)
        let cycle = 400
        return (0..<count).map { i in
            let k = Double(i % cycle)
            let direction: Vector3
            if plane {
                // A device turned about its z axis only: the field sweeps a cone, never the poles.
                let angle = k * 2 * .pi / Double(cycle)
                direction = Vector3(x: 0.4 * cos(angle), y: 0.4 * sin(angle), z: -0.9165)
            } else {
                let z = 1 - 2 * (k + 0.5) / Double(cycle), r = (1 - z * z).squareRoot(), phi = k * 2.399963
                direction = Vector3(x: r * cos(phi), y: r * sin(phi), z: z)
            }
            return distortion * (direction * 45) + random.vector(noise)
        }
    }

    /// A soft-iron distortion: gains 1.12, 0.93 and their volume-keeping third along turned axes.
    static let distortion: Matrix3 = {
        let axes = Quaternion(angle: 0.6, axis: Vector3(x: 1, y: 2, z: 3) * (1 / 14.0.squareRoot())).rotationMatrix
        return Matrix3.symmetric(values: Vector3(x: 1.12, y: 0.93, z: 1 / (1.12 * 0.93)), vectors: axes)
    }()

    @Test func aKnownSoftIronDistortionIsUndone() {
        var calibrator = SoftIronCalibrator(rate: 50)
        var corrected: [Vector3] = []
        for reading in Self.readings(count: 50 * 90, distortion: Self.distortion) { corrected.append(calibrator.calibrate(reading)) }
        #expect(calibrator.isEstimated)
        // The correction times the distortion is the identity (both have determinant 1).
        let residual = (calibrator.matrix * Self.distortion - .identity).frobeniusNorm
        #expect(residual < 0.01, "‖W·S − I‖ = \(residual)")
        // And the last readings lie on a sphere again: their norms spread no more than the noise does.
        let norms = corrected.suffix(400).map(\.length)
        let mean = norms.reduce(0, +) / Double(norms.count)
        let spread = (norms.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(norms.count)).squareRoot()
        #expect(spread / mean < 0.01, "relative spread \(spread / mean); 12 % before")
    }

    @Test func anUndistortedSphereIsLeftAlone() {
        var calibrator = SoftIronCalibrator(rate: 50)
        for reading in Self.readings(count: 50 * 90, distortion: .identity) { _ = calibrator.calibrate(reading) }
        #expect(calibrator.isEstimated && calibrator.matrix == .identity)
    }

    @Test func turningAboutOneAxisTeachesNothing() {
        var calibrator = SoftIronCalibrator(rate: 50)
        for reading in Self.readings(count: 50 * 90, distortion: Self.distortion, plane: true) { _ = calibrator.calibrate(reading) }
        #expect(!calibrator.isEstimated && calibrator.matrix == .identity, "an ellipsoid is not determined by one circle")
    }

    @Test func theCorrectionIsSavedAndRestoredWithTheCalibration() {
        var fusion = SensorFusion(gyroscopeRate: 100)
        let saved = SensorFusion.Calibration(
            gyroscopeBias: .zero, gyroscopeBiasSigma: 0.01, magnetometerOffset: Vector3(x: 3, y: 0, z: 0), magnetometerOffsetError: 0.4,
            fieldStrength: 45, magnetometerSoftIron: Self.distortion.rowMajor,
            gyroscopeScale: Vector3(x: 0.002, y: -0.001, z: 0), gyroscopeScaleSigma: 0.003)
        fusion.restore(saved)
        #expect(fusion.calibration == saved)
        #expect(fusion.softIron.matrix == Self.distortion)
    }

    @Test func aCalibrationSavedBeforeSoftIronExistedStillLoads() throws {
        let old = #"{"gyroscopeBias":{"x":0,"y":0,"z":0},"gyroscopeBiasSigma":0.01,"magnetometerOffset":{"x":1,"y":2,"z":3},"fieldStrength":45}"#
        let calibration = try JSONDecoder().decode(SensorFusion.Calibration.self, from: Data(old.utf8))
        #expect(calibration.magnetometerSoftIron == nil && calibration.magnetometerOffset == Vector3(x: 1, y: 2, z: 3))
    }
}
