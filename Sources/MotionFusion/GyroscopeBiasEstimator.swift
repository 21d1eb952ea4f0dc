import MotionCore

/// Estimates the gyroscope bias (rad/s) with a three-state Kalman filter, in motion and at rest
/// (the estimator of VQF, Laidig & Seel 2023, §3.3).
///
/// In motion, the measurement is the inclination correction the accelerometer asks for, as an
/// angular rate in the earth frame, compared with the low-passed bias rotated into that frame;
/// the vertical component is not observable from gravity and gets a tiny weight. At rest, the
/// measurement is the low-pass mean of the rotation rate itself.
///
/// Parameters (°/s are converted to rad/s; defaults are VQF's, from the bias stability of MEMS gyroscopes):
/// - `initialSigma` 0.5 °/s: uncertainty of the bias at start;
/// - `forgettingTime` 100 s: time for the uncertainty to grow by 0.1 °/s without measurements;
/// - `clip` 2 °/s: the largest bias and the largest single disagreement accepted;
/// - `motionSigma` 0.1 °/s: uncertainty of the in-motion measurement;
/// - `verticalForgettingFactor` 1e-4: relative weight of the vertical in-motion measurement;
/// - `restSigma` 0.03 °/s: uncertainty of the at-rest measurement.
struct GyroscopeBiasEstimator: Sendable, Codable, Equatable {
    struct Parameters: Sendable, Codable, Equatable {
        var initialSigma = 0.5 * .pi / 180
        var forgettingTime = 100.0
        var clip = 2.0 * .pi / 180
        var motionSigma = 0.1 * .pi / 180
        var verticalForgettingFactor = 1e-4
        var restSigma = 0.03 * .pi / 180
    }

    /// Derived once from the parameters and the accelerometer's period.
    struct Coefficients: Sendable, Codable, Equatable {
        var initialVariance: Double
        var processNoise: Double
        var motionWeight: Double
        var verticalWeight: Double
        var restWeight: Double

        init(_ p: Parameters, accelerometerPeriod: Double) {
            initialVariance = p.initialSigma * p.initialSigma
            let growth = 0.1 * .pi / 180
            processNoise = growth * growth * accelerometerPeriod / p.forgettingTime
            let motion = p.motionSigma * p.motionSigma
            motionWeight = motion * motion / processNoise + motion
            verticalWeight = motionWeight / max(p.verticalForgettingFactor, 1e-10)
            let rest = p.restSigma * p.restSigma
            restWeight = rest * rest / processNoise + rest
        }
    }

    let parameters: Parameters
    let coefficients: Coefficients
    /// The estimate, rad/s, device frame.
    private(set) var bias = Vector3.zero
    /// Its covariance, (rad/s)².
    private(set) var covariance: Matrix3
    private var rotationMean: LowPassFilter<Matrix3>
    private var rotatedBiasMean: LowPassFilter<Vector3>

    init(parameters: Parameters, accelerometerPeriod: Double, accelerometerTau: Double) {
        self.parameters = parameters
        coefficients = Coefficients(parameters, accelerometerPeriod: accelerometerPeriod)
        covariance = .diagonal(coefficients.initialVariance, coefficients.initialVariance, coefficients.initialVariance)
        rotationMean = LowPassFilter(tau: accelerometerTau, period: accelerometerPeriod)
        rotatedBiasMean = LowPassFilter(tau: accelerometerTau, period: accelerometerPeriod)
    }

    /// The bias's standard deviation, rad/s: the square root of the largest diagonal term.
    var sigma: Double { max(covariance.row0.x, covariance.row1.y, covariance.row2.z).squareRoot() }

    /// One step per accelerometer sample.
    ///
    /// - Parameters:
    ///   - attitude: the current 6D attitude (device → earth).
    ///   - correction: the normalised low-passed specific force in the earth frame, before this step's
    ///     inclination correction (its x, y are the tilt error).
    ///   - restingRate: the mean rotation rate if the device is at rest, else `nil`.
    ///   - period: the accelerometer's sampling period, s.
    mutating func update(rotation: Matrix3, correction accelerationEarth: Vector3, restingRate: Vector3?, period: Double) {
        var r = rotationMean.update(rotation)
        let rotatedBias = rotatedBiasMean.update(rotation * bias)

        let error: Vector3
        let weight: Vector3
        if let restingRate {
            error = restingRate - bias
            r = .identity
            weight = Vector3(x: coefficients.restWeight, y: coefficients.restWeight, z: coefficients.restWeight)
        } else {
            let predicted = r * bias
            error = Vector3(
                x: -accelerationEarth.y / period + rotatedBias.x - predicted.x,
                y: accelerationEarth.x / period + rotatedBias.y - predicted.y,
                z: -predicted.z)
            weight = Vector3(x: coefficients.motionWeight, y: coefficients.motionWeight, z: coefficients.verticalWeight)
        }

        // Predict: the bias may have drifted (the covariance grows up to its initial value).
        let v = coefficients.processNoise
        let p0 = coefficients.initialVariance
        if covariance.row0.x < p0 { covariance.row0.x += v }
        if covariance.row1.y < p0 { covariance.row1.y += v }
        if covariance.row2.z < p0 { covariance.row2.z += v }

        // Update: K = P Rᵀ S⁻¹ with S = R P Rᵀ + W; bias += K e; P −= K (R P) = K (P Rᵀ)ᵀ.
        // P and S are symmetric, which the products below use.
        let e = error.clamped(to: parameters.clip)
        let pRt = covariance * r.transposed
        var innovation = r.symmetricProduct(pRt)
        innovation.row0.x += weight.x
        innovation.row1.y += weight.y
        innovation.row2.z += weight.z
        let gain = pRt * innovation.symmetricInverse
        bias = (bias + gain * e).clamped(to: parameters.clip)
        covariance = covariance - gain.symmetricProduct(pRt)
    }

    /// Sets the estimate (e.g. from saved state), rad/s, with its standard deviation, rad/s.
    mutating func set(bias: Vector3, sigma: Double) {
        self.bias = bias
        covariance = .diagonal(sigma * sigma, sigma * sigma, sigma * sigma)
    }
}
