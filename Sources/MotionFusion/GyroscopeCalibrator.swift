import MotionCore

/// Estimates the gyroscope's bias (rad/s) and scale-factor errors (per axis) with a six-state Kalman
/// filter, in motion and at rest. The rate the attitude integrates is `raw × (1 + scale) − bias`.
///
/// The bias part is VQF's estimator (Laidig & Seel 2023, §3.3). In motion, the measurement is the
/// inclination correction the accelerometer asks for, as an angular rate in the earth frame, compared
/// with the low-passed effect of the current estimates rotated into that frame; the vertical component
/// is not observable from gravity and gets a tiny weight. At rest, the measurement is the low-pass mean
/// of the rotation rate itself.
///
/// The scale part is this project's: a MEMS gyroscope's sensitivity is off by up to a few per cent
/// (datasheet tolerances of ±1 to ±3 %), so a turn of 360° integrates to 359° or 361°, and a device
/// turned on and on in one direction drifts by that much per turn. A scale error on an axis shows in
/// the earth frame as `R·diag(rate)·scale`, next to the bias's `R·bias`: the same measurement
/// observes both, whenever the device turns about an axis that is not vertical.
///
/// Parameters (°/s are converted to rad/s; the bias defaults are VQF's, from the bias stability of
/// MEMS gyroscopes):
/// - `initialSigma` 0.5 °/s: uncertainty of the bias at start;
/// - `forgettingTime` 100 s: time for the bias uncertainty to grow by 0.1 °/s without measurements;
/// - `clip` 2 °/s: the largest bias and the largest single disagreement accepted;
/// - `motionSigma` 0.1 °/s: uncertainty of the in-motion measurement;
/// - `verticalForgettingFactor` 1e-4: relative weight of the vertical in-motion measurement;
/// - `restSigma` 0.03 °/s: uncertainty of the at-rest measurement;
/// - `initialScaleSigma` 0.01 (1 %): uncertainty of the scale at start, a factory-trimmed sensitivity;
/// - `scaleClip` 0.03 (3 %): the largest scale error accepted, the widest datasheet tolerance;
/// - `scaleForgettingTime` 1000 s: time for the scale uncertainty to grow by 0.1 % (sensitivity
///   drifts with temperature, some 0.01–0.03 %/K);
/// - `scaleCorrelation` 0.5: the correlation of the three axes' scale errors at start. Three-axis
///   MEMS gyroscopes commonly drive one proof-mass oscillation for all axes, so part of a sensitivity
///   error is common to them; half is a middling prior. It lets turns about the axes that are
///   observed teach something about the one that stays vertical.
/// - `estimatesScale` (default true): false keeps the scale at zero (VQF's bias-only estimator).
struct GyroscopeCalibrator: Sendable, Codable, Equatable {
    struct Parameters: Sendable, Codable, Equatable {
        var initialSigma = 0.5 * .pi / 180
        var forgettingTime = 100.0
        var clip = 2.0 * .pi / 180
        var motionSigma = 0.1 * .pi / 180
        var verticalForgettingFactor = 1e-4
        var restSigma = 0.03 * .pi / 180
        var initialScaleSigma = 0.01
        var scaleClip = 0.03
        var scaleForgettingTime = 1000.0
        var scaleCorrelation = 0.5
        var estimatesScale = true
    }

    /// Derived once from the parameters and the accelerometer's period.
    struct Coefficients: Sendable, Codable, Equatable {
        var initialVariance: Double
        var processNoise: Double
        var motionWeight: Double
        var verticalWeight: Double
        var restWeight: Double
        var initialScaleVariance: Double
        var scaleProcessNoise: Double

        init(_ p: Parameters, accelerometerPeriod: Double) {
            initialVariance = p.initialSigma * p.initialSigma
            let growth = 0.1 * .pi / 180
            processNoise = growth * growth * accelerometerPeriod / p.forgettingTime
            let motion = p.motionSigma * p.motionSigma
            motionWeight = motion * motion / processNoise + motion
            verticalWeight = motionWeight / max(p.verticalForgettingFactor, 1e-10)
            let rest = p.restSigma * p.restSigma
            restWeight = rest * rest / processNoise + rest
            initialScaleVariance = p.estimatesScale ? p.initialScaleSigma * p.initialScaleSigma : 0
            scaleProcessNoise = p.estimatesScale ? 0.001 * 0.001 * accelerometerPeriod / p.scaleForgettingTime : 0
        }
    }

    let parameters: Parameters
    let coefficients: Coefficients
    /// The bias estimate, rad/s, device frame.
    private(set) var bias = Vector3.zero
    /// The scale-factor error estimate per device axis (0.002: the gyroscope reads 0.2 % low).
    private(set) var scale = Vector3.zero
    // The covariance of (bias, scale) in blocks: bias (rad/s)², scale (dimensionless²), bias × scale.
    private(set) var covariance: Matrix3
    private var scaleCovariance: Matrix3
    private var crossCovariance: Matrix3
    private var rotationMean: LowPassFilter<Matrix3>
    private var rotatedRateMean: LowPassFilter<Matrix3>
    private var rotatedBiasMean: LowPassFilter<Vector3>

    init(parameters: Parameters, accelerometerPeriod: Double, accelerometerTau: Double) {
        self.parameters = parameters
        coefficients = Coefficients(parameters, accelerometerPeriod: accelerometerPeriod)
        covariance = .diagonal(coefficients.initialVariance, coefficients.initialVariance, coefficients.initialVariance)
        let sv = coefficients.initialScaleVariance
        let shared = sv * parameters.scaleCorrelation
        scaleCovariance = Matrix3(
            row0: Vector3(x: sv, y: shared, z: shared), row1: Vector3(x: shared, y: sv, z: shared),
            row2: Vector3(x: shared, y: shared, z: sv))
        crossCovariance = .zero
        rotationMean = LowPassFilter(tau: accelerometerTau, period: accelerometerPeriod)
        rotatedRateMean = LowPassFilter(tau: accelerometerTau, period: accelerometerPeriod)
        rotatedBiasMean = LowPassFilter(tau: accelerometerTau, period: accelerometerPeriod)
    }

    /// The bias's variance, (rad/s)²: the largest diagonal term.
    var variance: Double { max(covariance.row0.x, covariance.row1.y, covariance.row2.z) }

    /// The bias's standard deviation, rad/s.
    var sigma: Double { variance.squareRoot() }

    /// The scale's standard deviation: the square root of the largest diagonal term.
    var scaleSigma: Double { max(scaleCovariance.row0.x, scaleCovariance.row1.y, scaleCovariance.row2.z).squareRoot() }

    /// A raw rotation rate (rad/s) corrected: `raw × (1 + scale) − bias`.
    @inline(__always)
    func corrected(_ rate: Vector3) -> Vector3 {
        Vector3(x: rate.x * (1 + scale.x) - bias.x, y: rate.y * (1 + scale.y) - bias.y, z: rate.z * (1 + scale.z) - bias.z)
    }

    /// One step per (decimated) accelerometer sample.
    ///
    /// - Parameters:
    ///   - rotation: the 6D attitude (device → earth) at the middle of the interval since the last step.
    ///   - rate: the mean raw rotation rate since the last step, rad/s.
    ///   - correction: the tilt error in x, y (z unused): the normalised low-passed specific force in
    ///     the earth frame before the inclination correction, averaged over the accelerometer samples
    ///     since the last step.
    ///   - restingRate: the mean rotation rate if the device is at rest, else `nil`.
    ///   - period: the accelerometer's sampling period, s.
    mutating func update(rotation: Matrix3, rate: Vector3, correction accelerationEarth: Vector3, restingRate: Vector3?, period: Double) {
        var a = rotationMean.update(rotation)
        // R·diag(rate): how a scale error on each axis shows in the earth frame.
        let rotatedRate = Matrix3(
            row0: Vector3(x: rotation.row0.x * rate.x, y: rotation.row0.y * rate.y, z: rotation.row0.z * rate.z),
            row1: Vector3(x: rotation.row1.x * rate.x, y: rotation.row1.y * rate.y, z: rotation.row1.z * rate.z),
            row2: Vector3(x: rotation.row2.x * rate.x, y: rotation.row2.y * rate.y, z: rotation.row2.z * rate.z))
        var b = rotatedRateMean.update(rotatedRate) * -1
        let rotatedBias = rotatedBiasMean.update(rotation * bias - rotatedRate * scale)

        let error: Vector3
        let weight: Vector3
        if let restingRate {
            error = restingRate - bias
            a = .identity
            b = .zero
            weight = Vector3(x: coefficients.restWeight, y: coefficients.restWeight, z: coefficients.restWeight)
        } else {
            let predicted = a * bias + b * scale
            error = Vector3(
                x: -accelerationEarth.y / period + rotatedBias.x - predicted.x,
                y: accelerationEarth.x / period + rotatedBias.y - predicted.y,
                z: -predicted.z)
            weight = Vector3(x: coefficients.motionWeight, y: coefficients.motionWeight, z: coefficients.verticalWeight)
        }

        let v = coefficients.processNoise
        let p0 = coefficients.initialVariance
        if covariance.row0.x < p0 { covariance.row0.x += v }
        if covariance.row1.y < p0 { covariance.row1.y += v }
        if covariance.row2.z < p0 { covariance.row2.z += v }
        if parameters.estimatesScale {
            let sv = coefficients.scaleProcessNoise
            let s0 = coefficients.initialScaleVariance
            if scaleCovariance.row0.x < s0 { scaleCovariance.row0.x += sv }
            if scaleCovariance.row1.y < s0 { scaleCovariance.row1.y += sv }
            if scaleCovariance.row2.z < s0 { scaleCovariance.row2.z += sv }
        }

        // H = [A B]; P Hᵀ = [Ub; Us]; S = A Ub + B Us + W; K = [Ub; Us] S⁻¹.
        let e = error.clamped(to: parameters.clip)
        let ub = covariance * a.transposed + crossCovariance * b.transposed
        let us = crossCovariance.transposed * a.transposed + scaleCovariance * b.transposed
        var innovation = a * ub + b * us
        innovation.row0.x += weight.x
        innovation.row1.y += weight.y
        innovation.row2.z += weight.z
        let inverse = innovation.symmetricInverse
        let kb = ub * inverse
        let ks = us * inverse
        bias = (bias + kb * e).clamped(to: parameters.clip)
        scale = (scale + ks * e).clamped(to: parameters.scaleClip)
        covariance = covariance - kb.symmetricProduct(ub)
        crossCovariance = crossCovariance - kb * us.transposed
        scaleCovariance = scaleCovariance - ks.symmetricProduct(us)
    }

    /// Sets the estimates (e.g. from saved state): bias, rad/s, with its standard deviation, rad/s;
    /// scale with its standard deviation (nil: the scale starts afresh).
    mutating func set(bias: Vector3, sigma: Double, scale: Vector3? = nil, scaleSigma: Double? = nil) {
        self.bias = bias
        covariance = .diagonal(sigma * sigma, sigma * sigma, sigma * sigma)
        crossCovariance = .zero
        guard parameters.estimatesScale, let scale, let scaleSigma else { return }
        self.scale = scale.clamped(to: parameters.scaleClip)
        scaleCovariance = .diagonal(scaleSigma * scaleSigma, scaleSigma * scaleSigma, scaleSigma * scaleSigma)
    }
}
