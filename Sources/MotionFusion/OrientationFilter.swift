#if canImport(Glibc)
import Glibc
#endif
import MotionCore

/// Estimates the attitude of a device from its gyroscope, accelerometer and (optionally)
/// magnetometer, with estimation of the gyroscope's bias and scale errors (`GyroscopeCalibrator`) and
/// magnetic disturbance rejection.
///
/// The structure follows VQF (D. Laidig, T. Seel, "VQF: Highly accurate IMU orientation estimation
/// with bias estimation and magnetic disturbance rejection", Information Fusion 91, 2023): the
/// attitude is split into a strapdown-integrated gyroscope quaternion, an inclination correction
/// from the accelerometer low-passed in an almost-inertial frame, and a heading correction about the
/// vertical from the magnetometer. Each sensor has its own update, on its own timestamp.
///
/// Frames: the device frame of the samples (SI units: rad/s, m/s² specific force, µT); the earth
/// frame is z up, and with a magnetometer x East, y North (ENU); without one the heading is arbitrary.
public struct OrientationFilter: Sendable, Codable, Equatable {
    /// Tuning, with units and defaults.
    public struct Parameters: Sendable, Codable, Equatable {
        /// Time constant of the inclination correction, s (default 3): the low-pass that separates
        /// gravity from accelerations of the device.
        public var accelerometerTau = 3.0
        /// Time constant of the heading correction, s (default 20). It weighs the gyroscope's heading
        /// drift against the magnetometer's errors: with the bias and scale estimated in motion, the
        /// field's errors indoors (its bends across a room, a passing disturbance below the detector's
        /// thresholds) are the larger. BROAD's development trials, split in two halves of six and five
        /// (01 06 15 24 28 32 / 04 10 21 26 34), 9D total error at full rate: 9 s (VQF's default)
        /// 2.94° / 2.07°, 20 s 2.28° / 1.56°, 40 s 2.17° / 1.60°; at 50 Hz 40 s lost on the second
        /// half what it won on the first, 20 s won on both at every rate.
        public var magnetometerTau = 20.0
        /// The largest heading error one magnetometer sample corrects by, rad (default 0.1; `.infinity`:
        /// no limit); a larger one pulls as the limit does (Huber), so a field that is not the Earth's (a
        /// magnet before its hard-iron fit, 2 rad off) moves the heading little. 0.1 is 1.345 σ of the
        /// per-sample error in undisturbed motion (σ 0.05–0.075 on BROAD 01 04 06 10 15). The first
        /// sample, which sets the heading, is taken whole.
        public var headingErrorLimit = 0.1
        /// Whether the gyroscope bias is estimated while the device moves (default true).
        public var estimatesBiasInMotion = true
        /// Whether the gyroscope bias is estimated while the device rests (default true).
        public var estimatesBiasAtRest = true
        /// The lowest rate the gyroscope bias estimator runs at, Hz (default 12.5; 0: every
        /// accelerometer sample), to save time. It is given the mean of the tilt errors and the rates
        /// over its interval and the attitude at the interval's middle, so that it estimates what the
        /// every-sample estimator does: on BROAD's eleven development trials, at full rate, 100 Hz and
        /// 50 Hz, 9D and 6D totals per trial 0.002–0.005° from it on average, 0.046° at most (given the last
        /// sample's tilt error and attitude: 0.011–0.030°, 0.090° at most).
        public var biasEstimationRate = 12.5
        /// Whether the gyroscope's scale-factor errors are estimated with its bias (default true; see
        /// `GyroscopeCalibrator`).
        public var estimatesGyroscopeScale: Bool {
            get { gyroscope.estimatesScale }
            set { gyroscope.estimatesScale = newValue }
        }
        /// Whether a hard-iron offset learnt or replaced that turns the heading by more than
        /// `headingErrorLimit` on average turns the heading to it at once (default true; see
        /// `magnetometerCalibrationChanged()`).
        public var turnsHeadingWhenRecalibrated = true
        /// Whether magnetic disturbances stop or slow the heading correction (default true).
        public var rejectsMagneticDisturbances = true
        var rest = RestDetector.Parameters()
        var gyroscope = GyroscopeCalibrator.Parameters()
        var magnetic = MagneticDisturbanceDetector.Parameters()

        /// The defaults.
        public init() {}
    }

    /// The parameters in use.
    public let parameters: Parameters
    /// Nominal sampling periods, s.
    public let gyroscopePeriod: Double
    public let accelerometerPeriod: Double
    private(set) var magnetometerPeriod: Double
    private(set) var magnetometerGain: Double

    // Device → almost-inertial frame, from the gyroscope alone.
    private var gyroscopeAttitude = Quaternion.identity
    // Almost-inertial → earth (6D) frame: the accumulated inclination corrections.
    private var inclinationCorrection = Quaternion.identity
    // Heading correction about the vertical, rad: 6D earth → ENU.
    private var heading = HeadingAngle()
    private var accelerationMean: LowPassFilter<Vector3>
    private var rest: RestDetector
    private var gyroscopeCalibrator: GyroscopeCalibrator
    private var magnetic: MagneticDisturbanceDetector
    // Gain floor 1/N for the first magnetometer samples, so that the heading converges at once.
    private var initialMagnetometerGain = 1.0
    private var gyroscopeClock: SamplingPeriodEstimator
    // The bias estimator sees every `biasDecimation`-th accelerometer sample (see `init`).
    let biasDecimation: Int
    private var biasCountdown = 0
    // The raw rotation rates since the calibrator's last step, whose mean it is given.
    private var rateSum = Vector3.zero
    private var rateCount = 0
    // The tilt errors the inclination corrections took out since the calibrator's last step (x, y of
    // the unit low-passed force in the earth frame before each), summed, and their count; and the
    // attitude at those samples' middle (the two middle ones for an even count), summed, and its count.
    // The calibrator is given the means: the measurement over its whole interval, at the instant it
    // stands for, as the every-sample estimator sees it (see `biasEstimationRate`).
    private var tiltErrorSum = Vector3.zero
    private var tiltErrorCount = 0
    private var middleRotationSum = Matrix3.zero
    private var middleRotationCount = 0
    // Half the turn of one period at the last gyroscope sample's rate, rad (the coning correction's,
    // and `atMiddleOfLastStep`'s).
    private var previousHalfIncrement = Vector3.zero

    /// Creates a filter for sensors sampled at the given rates, Hz (the magnetometer's defaults to the
    /// gyroscope's).
    public init(gyroscopeRate: Double, accelerometerRate: Double? = nil, magnetometerRate: Double? = nil, parameters: Parameters = .init()) {
        self.parameters = parameters
        gyroscopePeriod = 1 / gyroscopeRate
        accelerometerPeriod = 1 / (accelerometerRate ?? gyroscopeRate)
        magnetometerPeriod = 1 / (magnetometerRate ?? gyroscopeRate)
        magnetometerGain = firstOrderGain(tau: parameters.magnetometerTau, period: magnetometerPeriod)
        gyroscopeClock = SamplingPeriodEstimator(nominalPeriod: gyroscopePeriod)
        accelerationMean = LowPassFilter(tau: parameters.accelerometerTau, period: accelerometerPeriod)
        rest = RestDetector(parameters: parameters.rest, gyroscopePeriod: gyroscopePeriod, accelerometerPeriod: accelerometerPeriod)
        // Every n-th sample, n the largest that keeps the estimator at or above its rate (a rate that
        // is no rate, NaN or not above 0, means every sample; `Int` of a NaN or a huge ratio traps).
        let ratio = parameters.biasEstimationRate > 0 ? (1 / accelerometerPeriod) / parameters.biasEstimationRate : 1
        biasDecimation = ratio >= 2 ? Int(min(ratio, 1e6)) : 1
        gyroscopeCalibrator = GyroscopeCalibrator(
            parameters: parameters.gyroscope, accelerometerPeriod: accelerometerPeriod * Double(biasDecimation),
            accelerometerTau: parameters.accelerometerTau)
        magnetic = MagneticDisturbanceDetector(parameters: parameters.magnetic, period: magnetometerPeriod)
    }

    /// Follows a magnetometer sampled at `rate` Hz rather than the rate the filter was made for: the
    /// heading correction's gain and the disturbance detector's coefficients at that rate, the field it
    /// learnt kept; the attitude and the heading go on.
    public mutating func setMagnetometerRate(_ rate: Double) {
        magnetometerPeriod = 1 / rate
        magnetometerGain = firstOrderGain(tau: parameters.magnetometerTau, period: magnetometerPeriod)
        magnetic = magnetic.atPeriod(magnetometerPeriod)
    }

    /// The filter for a gyroscope and accelerometer now sampled at `gyroscopeRate` and
    /// `accelerometerRate` Hz (a capture reopened at another rate): every time constant counted in
    /// samples is made for the new rates. The attitude, the heading, the gyroscope calibration, the
    /// disturbance detector and the low-passed specific force go on (restarted, the low-pass's warm-up
    /// mean of the next samples would turn the attitude over at once to whatever they say); rest
    /// detection and the bias estimator's own low-passes start again.
    public func atRates(gyroscope gyroscopeRate: Double, accelerometer accelerometerRate: Double) -> OrientationFilter {
        var next = OrientationFilter(
            gyroscopeRate: gyroscopeRate, accelerometerRate: accelerometerRate, magnetometerRate: 1 / magnetometerPeriod,
            parameters: parameters)
        next.gyroscopeAttitude = gyroscopeAttitude
        next.inclinationCorrection = inclinationCorrection
        next.heading = heading
        next.initialMagnetometerGain = initialMagnetometerGain
        next.magnetic = magnetic
        next.recalibrationCheck = recalibrationCheck
        next.accelerationMean = accelerationMean.atPeriod(1 / accelerometerRate)
        next.biasCountdown = next.biasDecimation
        next.gyroscopeCalibrator.set(
            bias: gyroscopeBias, sigma: gyroscopeBiasSigma, scale: gyroscopeScale, scaleSigma: gyroscopeScaleSigma)
        return next
    }

    // MARK: Outputs

    /// Device → earth frame with an arbitrary heading (gyroscope and accelerometer only).
    public var attitudeWithoutMagnetometer: Quaternion {
        @inline(__always) get { inclinationCorrection * gyroscopeAttitude }
    }

    /// Device → East-North-Up (with the magnetometer's heading).
    public var attitude: Quaternion {
        Quaternion(w: cos(heading.radians / 2), x: 0, y: 0, z: sin(heading.radians / 2)) * attitudeWithoutMagnetometer
    }

    /// The estimated gyroscope bias, rad/s, device frame.
    public var gyroscopeBias: Vector3 { gyroscopeCalibrator.bias }

    /// The bias estimate's standard deviation, rad/s.
    public var gyroscopeBiasSigma: Double { gyroscopeCalibrator.sigma }

    /// The estimated scale-factor error of the gyroscope per device axis, dimensionless: the rate
    /// integrated is `raw × (1 + scale) − bias` (0.002: the axis reads 0.2 % low).
    public var gyroscopeScale: Vector3 { gyroscopeCalibrator.scale }

    /// The scale estimate's standard deviation, dimensionless.
    public var gyroscopeScaleSigma: Double { gyroscopeCalibrator.scaleSigma }

    /// A raw gyroscope reading (rad/s) with the estimated scale and bias removed, rad/s.
    public func correctedRotationRate(_ rate: Vector3) -> Vector3 { gyroscopeCalibrator.corrected(rate) }

    /// Whether the device is resting.
    public var isResting: Bool { rest.isResting }

    /// Whether the magnetic field is currently judged disturbed.
    public var isMagneticFieldDisturbed: Bool { magnetic.isDisturbed }

    /// The dip of the Earth's field where the device is, rad (nil: not known): a new field far from
    /// it is not taken as the undisturbed one (`MagneticDisturbanceDetector.expectedDip`).
    public var expectedMagneticDip: Double? {
        get { magnetic.expectedDip }
        set { magnetic.expectedDip = newValue }
    }

    /// The heading correction, rad: the turn about the vertical from the arbitrary frame to ENU.
    public var headingCorrection: Double { heading.radians }

    /// Whether the tilt is known: an accelerometer sample has been fused.
    public var knowsTilt: Bool { accelerationMean.hasInput }

    /// Whether the heading has had its initial fast convergence (one magnetometer time constant).
    public var hasConvergedHeading: Bool { initialMagnetometerGain == 0 }
    /// Whether a magnetometer reading has set the heading (the first is taken whole): before it, the
    /// heading is the filter's start, not north's.
    public var knowsHeading: Bool { initialMagnetometerGain != 1 }

    /// The undisturbed field's strength, µT (0 until known).
    public var referenceFieldStrength: Double { magnetic.referenceNorm }

    /// Sets the gyroscope calibration, e.g. from a saved one: the bias (rad/s) with its standard
    /// deviation (rad/s), and the scale-factor error per axis with its standard deviation (nil: the
    /// scale is learnt afresh).
    public mutating func setGyroscopeCalibration(bias: Vector3, sigma: Double, scale: Vector3? = nil, scaleSigma: Double? = nil) {
        gyroscopeCalibrator.set(bias: bias, sigma: sigma, scale: scale, scaleSigma: scaleSigma)
    }

    // MARK: Updates

    /// One gyroscope sample: rotation rate in rad/s, timestamp in ns.
    public mutating func update(gyroscope rate: Vector3, timestamp: Int64) {
        // The sensor's own period, not the jittered difference of the host's stamps.
        let period = gyroscopeClock.interval(to: timestamp)
        if parameters.estimatesBiasAtRest || parameters.rejectsMagneticDisturbances {
            rest.update(gyroscope: rate, bias: gyroscopeCalibrator.bias, biasVariance: gyroscopeCalibrator.variance)
        }
        rateSum = rateSum + rate
        rateCount += 1
        let corrected = gyroscopeCalibrator.corrected(rate)
        let increment = corrected * period
        // Two-sample coning correction (Savage, "Strapdown inertial navigation integration algorithm
        // design, part 1", J. Guidance 21(1), 1998, eq. 47): a sample is the mean rate over its
        // period, and a turn whose axis itself turns is not the turn about the mean axis.
        // Only with the sample just before (not across a gap, a lost sample or a restart).
        let previousHalf = gyroscopeClock.followsLastSample ? previousHalfIncrement : .zero
        let angle = increment + previousHalf.cross(increment) * (1 / 6.0)
        // Half of one period's turn, even after lost samples: a sample stands for its own period.
        previousHalfIncrement = corrected * (0.5 * gyroscopeClock.period)
        let angleSquared = angle.squaredLength
        guard angleSquared > 1e-30 else { return }
        gyroscopeAttitude = keptUnit(gyroscopeAttitude * rotationStep(angle, angleSquared: angleSquared))
    }

    /// One accelerometer sample: specific force in m/s² (+9.81 on the up axis at rest), timestamp in ns.
    public mutating func update(accelerometer acceleration: Vector3, timestamp: Int64) {
        guard acceleration.squaredLength > 0 else { return }
        if parameters.estimatesBiasAtRest { rest.update(accelerometer: acceleration, period: accelerometerPeriod) }

        let isFirstSample = !knowsTilt
        // Low-pass in the almost-inertial frame (gravity is constant there, accelerations are not),
        // then into the earth frame and straight up.
        let mean = accelerationMean.update(gyroscopeAttitude.rotate(atMiddleOfLastStep(acceleration)))
        let force = inclinationCorrection.rotate(mean)
        let horizontalSquared = force.x * force.x + force.y * force.y
        let correction: Quaternion
        if force.z > 0 && horizontalSquared < 1e-6 * force.z * force.z {
            // The usual case, the low-passed force already within a milliradian α of up: the turn
            // onto +z is (L + z, y, −x, 0) up to its norm, and L + z = 2z to within α², so the
            // vector part (y, −x) / 2z with w = 1 − |v|²/2 turns by the same angle to within 0.4 α³
            // (below 1e-9 rad) and is a unit quaternion to within |v|⁴/4. No square root, one division.
            let k = 0.5 / force.z
            correction = Quaternion(w: 1 - 0.5 * horizontalSquared * k * k, x: force.y * k, y: -force.x * k, z: 0)
        } else {
            // The shortest turn of `force` onto +z, (L + z, y, −x, 0) / √(2L(L + z)) for a vector of
            // length L.
            let length = (horizontalSquared + force.z * force.z).squareRoot()
            guard length > 0 else { return }
            let lift = length + force.z
            if lift > 1e-12 * length {
                let k = 1 / (2 * length * lift).squareRoot()
                correction = Quaternion(w: lift * k, x: force.y * k, y: -force.x * k, z: 0)
            } else {
                correction = Quaternion(w: 0, x: 1, y: 0, z: 0)
            }
        }
        inclinationCorrection = keptUnit(correction * inclinationCorrection)

        if parameters.estimatesBiasInMotion || parameters.estimatesBiasAtRest {
            // The correction's vector part is (y, −x, 0)/2 of the unit force, to first order in the tilt.
            // The first sample's is no tilt error but the start: the whole tilt, from none known.
            if isFirstSample {
                biasCountdown = biasDecimation
            } else {
                tiltErrorSum = tiltErrorSum + Vector3(x: -2 * correction.y, y: 2 * correction.x, z: 0)
                tiltErrorCount += 1
            }
            biasCountdown -= 1
            // This sample is `biasCountdown` samples before the step, which ends `biasDecimation` of them.
            if abs(2 * biasCountdown - (biasDecimation - 1)) <= 1 {
                middleRotationSum = middleRotationSum + attitudeWithoutMagnetometer.rotationMatrix
                middleRotationCount += 1
            }
            let resting = parameters.estimatesBiasAtRest && rest.isResting
            if biasCountdown <= 0 && (resting || parameters.estimatesBiasInMotion) {
                biasCountdown = biasDecimation
                let meanRate = rateCount > 0 ? rateSum * (1 / Double(rateCount)) : .zero
                rateSum = .zero
                rateCount = 0
                let tiltError = tiltErrorCount > 0 ? tiltErrorSum * (1 / Double(tiltErrorCount)) : .zero
                let middleRotation = middleRotationCount > 0
                    ? middleRotationSum * (1 / Double(middleRotationCount)) : attitudeWithoutMagnetometer.rotationMatrix
                tiltErrorSum = .zero
                tiltErrorCount = 0
                middleRotationSum = .zero
                middleRotationCount = 0
                gyroscopeCalibrator.update(
                    rotation: middleRotation, rate: meanRate, correction: tiltError,
                    restingRate: resting ? rest.meanRotationRate : nil, period: accelerometerPeriod)
            }
        }
    }

    /// `v`, measured in the device frame (specific force, field), in the frame of half a gyroscope
    /// period earlier: `v − δ×v`, δ half a period's turn (first order). The strapdown step makes the
    /// attitude that of the period's end, but a sample stands for its middle (a mean over the period,
    /// or the signal through the same low-pass as the gyroscope's). Compared at the end, the
    /// accelerometer pulled the inclination back by half a period's turn (0.57° at 50 Hz and 1 rad/s),
    /// and the scale estimator learnt that as a scale error (BROAD trial 21: 0.34 % at 50 Hz, 0.19 %
    /// at full rate; compared at the middle, 0.15 % at both).
    @inline(__always)
    func atMiddleOfLastStep(_ v: Vector3) -> Vector3 { v + v.cross(previousHalfIncrement) }

    /// Tells the filter that the magnetometer's calibration changed (a hard-iron offset learnt or
    /// replaced). If the field seen through the new one disagrees with the heading by more than one
    /// sample may correct (`headingErrorLimit`), on average over the next `recalibrationCheckTime`,
    /// the heading was set through the old calibration (a magnet there from the start): it turns by
    /// that mean error at once, and the undisturbed field is learnt anew. The limit would otherwise
    /// walk it to the new field at `headingErrorLimit` / `magnetometerTau` at most (0.29°/s: 2.6
    /// minutes for a magnet's 45°), and the field seen through the new calibration would be rejected as
    /// a disturbance. A heading the gyroscope held right while a magnet was attached agrees with the
    /// new field, and is kept.
    public mutating func magnetometerCalibrationChanged() {
        guard parameters.turnsHeadingWhenRecalibrated, knowsHeading else { return }
        recalibrationCheck = RecalibrationCheck(remaining: Self.recalibrationCheckTime)
    }

    /// How long the heading error is averaged after a calibration change, s.
    static let recalibrationCheckTime = 5.0

    // The heading errors after a calibration change, summed as unit vectors, and the time still to add, s
    // (in time, not samples: a rate that changes meanwhile changes nothing).
    private struct RecalibrationCheck: Sendable, Codable, Equatable {
        var remaining: Double
        var cosine = 0.0
        var sine = 0.0
    }
    private var recalibrationCheck: RecalibrationCheck?

    /// One magnetometer sample: magnetic field in µT (hard/soft iron already removed), timestamp in ns.
    public mutating func update(magnetometer field: Vector3, timestamp: Int64) {
        // Before the first accelerometer sample the tilt is not known, and a field seen through the
        // wrong one would set the heading (the first sample is taken whole) for the limit to undo.
        guard field.squaredLength > 0, knowsTilt else { return }
        let fieldEarth = attitudeWithoutMagnetometer.rotate(atMiddleOfLastStep(field))
        var gain = magnetometerGain
        if parameters.rejectsMagneticDisturbances {
            gain *= magnetic.update(fieldEarth: fieldEarth, rotation: rest.meanRotationRate, period: magnetometerPeriod)
        }
        let limit = initialMagnetometerGain == 1 ? .infinity : parameters.headingErrorLimit
        if initialMagnetometerGain != 0 {
            gain = max(gain, initialMagnetometerGain)
            initialMagnetometerGain = initialMagnetometerGain / (initialMagnetometerGain + 1)
            if initialMagnetometerGain * parameters.magnetometerTau < magnetometerPeriod { initialMagnetometerGain = 0 }
        }
        // Heading error: the horizontal field should point North (+y of ENU).
        let error = heading.error(east: fieldEarth.x, north: fieldEarth.y)
        if recalibrationCheck != nil { checkRecalibration(error: error) }
        guard gain > 0 else { return }
        heading.turn(by: gain * min(max(error, -limit), limit))
    }
}

extension OrientationFilter {
    /// Adds one heading error (rad) to the check after a calibration change; at its end, turns the
    /// heading by the mean error if that is beyond the per-sample limit.
    fileprivate mutating func checkRecalibration(error: Double) {
        guard var check = recalibrationCheck else { return }
        check.cosine += cos(error)
        check.sine += sin(error)
        check.remaining -= magnetometerPeriod
        guard check.remaining <= 0 else {
            recalibrationCheck = check
            return
        }
        recalibrationCheck = nil
        let meanError = atan2(check.sine, check.cosine)
        if abs(meanError) > parameters.headingErrorLimit {
            heading.turn(by: meanError)
            magnetic.forgetReference()
        }
    }
}

/// The quaternion of the turn by the rotation vector `angle` (rad) whose squared length is
/// `angleSquared`. The angle per sample is small, so the half-angle sine and cosine come from their
/// series (error below 1e-15 up to 0.1 rad); larger steps use the library functions.
@inline(__always)
func rotationStep(_ angle: Vector3, angleSquared: Double) -> Quaternion {
    let halfAngleSquared = angleSquared * 0.25
    let w: Double
    let s: Double  // sin(half angle) / angle
    if halfAngleSquared < 0.0025 {
        let h = halfAngleSquared
        // Multiplied by constant reciprocals: a division by a constant stays a division (it rounds
        // differently), eight of them a sample.
        w = 1 - h * 0.5 * (1 - h * (1 / 12.0) * (1 - h * (1 / 30.0) * (1 - h * (1 / 56.0))))
        s = 0.5 * (1 - h * (1 / 6.0) * (1 - h * (1 / 20.0) * (1 - h * (1 / 42.0) * (1 - h * (1 / 72.0)))))
    } else {
        let length = angleSquared.squareRoot()
        w = cos(length / 2)
        s = sin(length / 2) / length
    }
    return Quaternion(w: w, x: s * angle.x, y: s * angle.y, z: s * angle.z)
}

/// A product of unit quaternions, renormalised only once rounding has moved its squared norm by 1e-13:
/// the (predicted) test is off the chain each sample waits for, the Newton step was not.
@inline(__always)
func keptUnit(_ q: Quaternion) -> Quaternion {
    let n = q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z
    return abs(n - 1) > 1e-13 ? q.renormalized : q
}

/// An angle wrapped into (−π, π], rad.
@inline(__always)
func wrapAngle(_ a: Double) -> Double {
    var a = a
    if a > .pi { a -= 2 * .pi } else if a <= -.pi { a += 2 * .pi }
    return a
}
