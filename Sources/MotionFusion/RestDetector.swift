import MotionCore

/// Decides that the device is at rest: the gyroscope and accelerometer have stayed close to their
/// low-pass means, and the rotation rate is small, for long enough.
///
/// Parameters (defaults from the noise of consumer MEMS IMUs, as in VQF):
/// - `minimumDuration` 1.5 s: how long the signals must stay quiet;
/// - `filterTau` 0.5 s: time constant of the low-pass means;
/// - `gyroscopeThreshold` 2 °/s: largest deviation of the rotation rate from its mean;
/// - `accelerometerThreshold` 0.5 m/s²: largest deviation of the specific force from its mean;
/// - `maximumRate` 2 °/s: largest mean rotation rate (a larger one is motion, or a bias too large to learn).
/// - `settledRate` 0.2 °/s: largest mean rotation rate *less the bias estimate*, once the bias is
///   known better than that (`biasSigmaFactor` 3 × its standard deviation is below it). Without it a
///   deliberate slow turn about the vertical (a player easing the camera round at 0.5 °/s) passes the
///   2 °/s tests, counts as rest and is learnt as bias: 73 % of such a turn vanished from the attitude
///   (`scripts/gyro-calibration-figures`). 0.2 °/s is 40 times the rest-phase residual measured on
///   BROAD (0.005 °/s) and well below a MEMS gyroscope's bias drift over a session (0.01–0.03 °/s/K).
struct RestDetector: Sendable, Codable, Equatable {
    struct Parameters: Sendable, Codable, Equatable {
        var minimumDuration = 1.5
        var filterTau = 0.5
        var gyroscopeThreshold = 2.0 * .pi / 180
        var accelerometerThreshold = 0.5
        var maximumRate = 2.0 * .pi / 180
        var settledRate = 0.2 * .pi / 180
        var biasSigmaFactor = 3.0
    }

    let parameters: Parameters
    private(set) var gyroscopeMean: LowPassFilter<Vector3>
    private(set) var accelerometerMean: LowPassFilter<Vector3>
    private(set) var quietTime = 0.0
    private(set) var isResting = false

    init(parameters: Parameters, gyroscopePeriod: Double, accelerometerPeriod: Double) {
        self.parameters = parameters
        gyroscopeMean = LowPassFilter(tau: parameters.filterTau, period: gyroscopePeriod)
        accelerometerMean = LowPassFilter(tau: parameters.filterTau, period: accelerometerPeriod)
    }

    /// The low-pass mean rotation rate, rad/s (what the bias is at rest).
    var meanRotationRate: Vector3 { gyroscopeMean.output }

    /// One rotation rate (rad/s), with the bias estimated so far and its variance ((rad/s)²; the
    /// variance, not the deviation, saves a square root per sample).
    mutating func update(gyroscope rate: Vector3, bias: Vector3 = .zero, biasVariance: Double = .infinity) {
        let mean = gyroscopeMean.update(rate)
        let t = parameters.maximumRate
        let settledSquared = max(
            parameters.settledRate * parameters.settledRate, parameters.biasSigmaFactor * parameters.biasSigmaFactor * biasVariance)
        if (rate - mean).squaredLength >= parameters.gyroscopeThreshold * parameters.gyroscopeThreshold
            || abs(mean.x) > t || abs(mean.y) > t || abs(mean.z) > t
            || (mean - bias).squaredLength > settledSquared
        {
            quietTime = 0
            isResting = false
        }
    }

    mutating func update(accelerometer acceleration: Vector3, period: Double) {
        let mean = accelerometerMean.update(acceleration)
        if (acceleration - mean).squaredLength >= parameters.accelerometerThreshold * parameters.accelerometerThreshold {
            quietTime = 0
            isResting = false
        } else {
            quietTime += period
            if quietTime >= parameters.minimumDuration { isResting = true }
        }
    }
}
