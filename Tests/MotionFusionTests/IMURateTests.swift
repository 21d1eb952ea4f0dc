import Foundation
import MotionCore
import Testing

@testable import MotionFusion

/// A capture reopened at another rate (a faster client came) hands the fusion samples at that rate.
/// Its time constants are in seconds but counted in samples, so it must be made for the new rate
/// (`setIMURates`), keeping what it knows.
@Suite struct IMURateTests {
    /// Lies flat for `flat` s at `before` Hz, then is tipped 30° about x for `seconds` at `after` Hz, the
    /// gyroscope still (only the accelerometer's inclination correction, τ = 3 s, turns the estimate
    /// over). Returns the estimated tilt, degrees.
    static func tilt(
        _ fusion: inout SensorFusion, flat: Double = 4, before: Double, after: Double, seconds: Double, tellingAt switchTold: Bool
    ) -> Double {
        let device = DeviceNumber(0)
        var t: Int64 = 0
        func feed(_ force: Vector3, rate: Double, for duration: Double) {
            for _ in 0..<Int(duration * rate) {
                t += Int64(1e9 / rate)
                fusion.update(SensorSample(kind: .gyroscope, device: device, timestamp: t, vector: .zero))
                fusion.update(SensorSample(kind: .accelerometer, device: device, timestamp: t, vector: force))
            }
        }
        feed(Vector3(x: 0, y: 0, z: 9.81), rate: before, for: flat)
        if switchTold { fusion.setIMURates(gyroscope: after, accelerometer: after) }
        let tipped = 30.0 * .pi / 180
        feed(Vector3(x: 0, y: 9.81 * sin(tipped), z: 9.81 * cos(tipped)), rate: after, for: seconds)
        return acos(fusion.filter.attitudeWithoutMagnetometer.rotationMatrix.row2.z) * 180 / .pi
    }

    @Test func aFusionToldOfAFasterIMUCorrectsAtThePaceInSecondsOfOneMadeForIt() {
        var madeFor = SensorFusion(gyroscopeRate: 200, accelerometerRate: 200)
        var told = SensorFusion(gyroscopeRate: 50, accelerometerRate: 50)
        var untold = SensorFusion(gyroscopeRate: 50, accelerometerRate: 50)
        let reference = Self.tilt(&madeFor, before: 200, after: 200, seconds: 1, tellingAt: false)
        let followed = Self.tilt(&told, before: 50, after: 200, seconds: 1, tellingAt: true)
        let stale = Self.tilt(&untold, before: 50, after: 200, seconds: 1, tellingAt: false)
        #expect(told.imuRates == (200, 200))
        #expect(abs(followed - reference) < 0.02 * reference, "told \(followed)°, made for 200 Hz \(reference)°")
        // Counting 200 Hz samples as 50 Hz ones, the untold fusion turns over four times too fast.
        #expect(abs(stale - reference) > 0.5 * reference, "untold \(stale)°, made for 200 Hz \(reference)°")
    }

    /// Within the first τ = 3 s the low-pass is a plain mean over time: samples before the change
    /// weigh by the time they span, not by their count.
    @Test func aRateChangeDuringTheWarmUpAveragesOverTime() {
        var madeFor = SensorFusion(gyroscopeRate: 200, accelerometerRate: 200)
        var told = SensorFusion(gyroscopeRate: 50, accelerometerRate: 50)
        let reference = Self.tilt(&madeFor, flat: 2, before: 200, after: 200, seconds: 0.5, tellingAt: false)
        let followed = Self.tilt(&told, flat: 2, before: 50, after: 200, seconds: 0.5, tellingAt: true)
        #expect(abs(followed - reference) < 0.02 * reference, "told \(followed)°, made for 200 Hz \(reference)°")
    }

    @Test func aRateChangeKeepsTheAttitudeAndTheCalibration() {
        var fusion = SensorFusion(gyroscopeRate: 50, accelerometerRate: 50)
        _ = Self.tilt(&fusion, before: 50, after: 50, seconds: 4, tellingAt: false)
        let attitude = fusion.filter.attitudeWithoutMagnetometer
        let calibration = fusion.calibration
        fusion.setIMURates(gyroscope: 100, accelerometer: 100)
        #expect(fusion.filter.attitudeWithoutMagnetometer == attitude)
        #expect(fusion.calibration == calibration)
    }

    @Test func aFusionWithoutGyroscopeFollowsItsAccelerometersRate() {
        var fusion = SensorFusion(gyroscopeRate: nil, accelerometerRate: 25)
        fusion.setIMURates(gyroscope: nil, accelerometer: 100)
        #expect(fusion.imuRates == (100, 100))
    }

    /// The bias estimator's rate: every 22nd sample of a 285.7 Hz accelerometer (13 Hz, at least the
    /// 12.5 asked), every sample of a 10 Hz one; a rate that is no rate (NaN, 0, negative) means every
    /// sample and one far below any sensor's is bounded, where `Int` of their ratio trapped.
    @Test func theBiasEstimatorTakesEveryNthSampleAndARateThatIsNoRateIsEverySample() {
        #expect(OrientationFilter(gyroscopeRate: 285.714).biasDecimation == 22)
        #expect(OrientationFilter(gyroscopeRate: 10).biasDecimation == 1)
        for rate in [Double.nan, 0, -5, 1e-300] {
            var parameters = OrientationFilter.Parameters()
            parameters.biasEstimationRate = rate
            let filter = OrientationFilter(gyroscopeRate: 100, parameters: parameters)
            #expect(filter.biasDecimation == (rate == 1e-300 ? 1_000_000 : 1), "biasEstimationRate \(rate)")
        }
    }

    /// The bias estimator at 13 Hz (every 22nd sample of 285.7 Hz) estimates what the every-sample one
    /// does: a device with a gyroscope bias of (0.5, −0.3, 0.4) °/s and a consumer IMU's noise, turning
    /// at 2 rad/s about an axis that changes every 1.5 s, for 60 s: the two bias estimates stay within
    /// 0.004 °/s and the attitudes end within 0.04° (0.0027 °/s and 0.028° on this seeded input; given
    /// the last sample's tilt error and attitude instead of the interval's, and the first sample's
    /// correction as a tilt error, 0.0096 °/s and 0.087°).
    @Test func theDecimatedBiasEstimatorFollowsTheEverySampleOne() {
        func run(biasEstimationRate: Double) -> (biases: [Vector3], attitude: Quaternion) {
            var parameters = OrientationFilter.Parameters()
            parameters.biasEstimationRate = biasEstimationRate
            var simulation = Simulation(rate: 285.714, useMagnetometer: false, parameters: parameters)
            #expect(simulation.fusion.filter.biasDecimation == (biasEstimationRate > 0 ? 22 : 1))
            simulation.noiseLevel = 1
            simulation.gyroscopeBias = Vector3(x: 0.5, y: -0.3, z: 0.4) * (.pi / 180)
            var q = Quaternion.identity
            simulation.hold(q, seconds: 2)
            var biases: [Vector3] = []
            for k in 0..<40 {
                let axis = Vector3(x: sin(Double(k) * 2.1), y: cos(Double(k) * 1.3), z: sin(Double(k) * 0.7 + 1))
                q = simulation.rotate(from: q, rate: axis * (2 / axis.length), seconds: 1.5)
                biases.append(simulation.fusion.filter.gyroscopeBias)
            }
            return (biases, simulation.fusion.filter.attitudeWithoutMagnetometer)
        }
        let decimated = run(biasEstimationRate: 12.5), everySample = run(biasEstimationRate: 0)
        let worst = zip(decimated.biases, everySample.biases).map { ($0 - $1).length * 180 / .pi }.max() ?? .infinity
        let apart = degrees(decimated.attitude.angle(to: everySample.attitude))
        #expect(worst < 0.004, "bias estimates apart by up to \(worst) °/s")
        #expect(apart < 0.04, "attitudes apart by \(apart)°")
    }

    /// The first accelerometer sample's correction is the start, the whole tilt from none known, not
    /// a tilt error: a device at rest on its side, its gyroscope without bias, learns no bias from it.
    /// Taken as one (divided by the period, clipped at 2 °/s, with the gain of a 22-sample step), it
    /// put 0.037 °/s into the bias estimate at once.
    @Test func theFirstSamplesTiltIsNotLearntAsABias() {
        var simulation = Simulation(rate: 285.714, useMagnetometer: false)
        simulation.hold(turn(80, about: .y), seconds: 0.2)
        let bias = simulation.fusion.filter.gyroscopeBias.length * 180 / .pi
        #expect(bias < 0.001, "\(bias) °/s")
    }
}
