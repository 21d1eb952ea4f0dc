#if canImport(Glibc)
import Glibc
#endif
import MotionCore

/// Estimates the magnetometer's hard-iron offset online, from ordinary motion: a least-squares
/// sphere fit (|m − c|² = r²) over an exponentially weighted window of recent samples.
///
/// A hard-iron offset is a field that turns with the device (its own magnetised parts, a magnet
/// attached to it); the Earth's field does not, so as the device turns the readings lie on a sphere
/// centred on the offset. A fit is accepted only when the window's motion determines the centre to
/// within `acceptedOffsetError` and the readings really lie on a sphere of Earth-like radius, so a
/// magnet lying near a moving device (not a sphere) or too little motion (no centre) changes nothing.
/// The window is short, so that a magnet attached to the device (or removed) is learnt in seconds.
///
/// Soft iron (an ellipsoid instead of a sphere) is not this fit's business: it needs far more motion
/// than a few seconds give. `SoftIronCalibrator` estimates it over a long window, after this offset.
///
/// Parameters:
/// - `windowTau` 5 s: time constant of the window;
/// - `evaluationInterval` 0.2 s: how often the fit is solved;
/// - `acceptedOffsetError` 1 µT: largest standard error of the centre for a fit to be used
///   (1.3° of heading in a 45 µT field);
/// - `independentSampleRate` 30 Hz: consecutive readings of a turning device are not independent
///   (the field moves slowly against the sampling rate, and the sensor's noise is band-limited), so
///   the standard error counts at most this many independent readings per second, whatever the rate;
/// - `maximumResidual` 0.04: largest RMS deviation from the sphere, relative to its radius
///   (magnetometer noise is about 1.5 % of the Earth's field);
/// - `radiusRange` 20…80 µT: the Earth's field is 25–65 µT everywhere;
/// - `replacementMargin` 3 µT: how much better (RMS distance from the sphere) a new offset must fit the
///   window than the current one to replace it at once; smaller misfits are the non-uniformity of
///   the field indoors (1–3 µT), which one window's sphere cannot tell from an offset. Without the
///   attitude, a fit that fits the window as well and determines the centre better (a smaller
///   standard error than the adopted fit had) refines the offset without it;
/// - `resetThreshold` 0.15: a jump of the field strength by this fraction starts a new window;
/// - `radiusTolerance` 0.1: once a field strength is known, a fit must reproduce it to within 10 %
///   (the Earth's field does not change where the device is; a fit that mixes two offsets does);
/// - `significance` 3 and `systematicError` 1 µT: the evidence where the readings come with the
///   device's attitude (from the gyroscope). Then a second, independent estimate of the offset
///   exists: the one that makes the calibrated field steadiest in the earth frame (the Earth's
///   field is fixed there; a window mixing two offsets, a field passing nearby, or the field's bends
///   are not). A new offset is adopted only where that estimate is determined (standard error within
///   `acceptedOffsetError`) and the two agree within `significance` × √(σ₁² + σ₂² +
///   `systematicError`²); a weak change (one the sphere's misfit alone does not prove) only where both estimates
///   are `significance` × max(standard error, `systematicError`) from the current offset, and the
///   same change is seen again a window time later (when the first window weighs e⁻¹ of the second)
///   and within four.
///   `systematicError` is the error no window averages away (the non-uniformity of the field
///   indoors and soft iron, 1–3 µT), so weak changes under 3 µT are not followed. A weak offset is
///   so learnt where the motion determines it, and otherwise not at all;
/// - `highOffsetError` 0.5 µT, `mediumOffsetError` 1 µT: the accuracy levels.
public struct MagnetometerCalibrator: Sendable, Codable, Equatable {
    /// Tuning, with units and defaults.
    public struct Parameters: Sendable, Codable, Equatable {
        public var windowTau = 5.0
        public var evaluationInterval = 0.2
        public var acceptedOffsetError = 1.0
        public var independentSampleRate = 30.0
        public var maximumResidual = 0.04
        public var minimumRadius = 20.0
        public var maximumRadius = 80.0
        public var replacementMargin = 3.0
        public var radiusTolerance = 0.1
        public var resetThreshold = 0.15
        public var highOffsetError = 0.5
        public var mediumOffsetError = 1.0
        /// Standard errors within which two estimates agree and beyond which an offset moved.
        public var significance = 3.0
        /// µT: the error no window averages away (see the type's documentation).
        public var systematicError = 1.0
        /// The defaults.
        public init() {}
    }

    public let parameters: Parameters
    private(set) var period: Double
    private(set) var decay: Double
    // Weighted sums of φφᵀ (upper triangle of the 4×4), φy and y², with φ = (2m, 1), y = |m|².
    private var sxx = 0.0, sxy = 0.0, sxz = 0.0, sx = 0.0
    private var syy = 0.0, syz = 0.0, sy = 0.0
    private var szz = 0.0, sz = 0.0, s1 = 0.0
    private var bx = 0.0, by = 0.0, bz = 0.0, b1 = 0.0, yy = 0.0
    // For `earthFrameSpread` and `earthFrameFit`, every `attitudeDecimation`-th reading (at most `independentSampleRate`
    // a second: the attitude's sums cost a rotation matrix) in a window of the same time constant:
    // weighted sums of 1, m, |m|², the attitude R (device → a frame fixed to the earth) and R·m, over
    // the readings that came with an attitude.
    private var attitudeDecimation = 1
    private var attitudeCountdown = 0
    private var attitudeDecay = 1.0
    private var attitudeWeight = 0.0
    private var fieldSum = Vector3.zero
    private var fieldSquareSum = 0.0
    private var attitudeSum = Matrix3.zero
    private var rotatedSum = Vector3.zero
    private var sinceEvaluation = 0.0
    private var sinceReset = 0.0
    private var windowMeanSquare = 0.0

    /// The hard-iron offset removed from every reading, µT, device frame.
    public private(set) var offset = Vector3.zero
    /// The field strength of the accepted fit, µT (0 before one).
    public private(set) var radius = 0.0
    /// The standard error of `offset` from the window fit, µT; `nil` before the first fit.
    public private(set) var offsetError: Double?
    /// Whether the latest reading fits the calibration (its calibrated norm within 10 % of `radius`).
    public private(set) var currentFieldFits = false
    // The standard error of the fit behind `offset` when it was adopted, µT (nil: none yet).
    private var adoptedError: Double?
    // A weak change seen in one window, waiting to be seen again a window time later, and its age, s.
    private var candidate: Estimate?
    private var candidateAge = 0.0

    /// Creates a calibrator for a magnetometer sampled at `rate` Hz, starting from `offset` (µT) if
    /// one is known (from saved state), with its standard error `offsetError` (µT).
    public init(rate: Double, offset: Vector3 = .zero, offsetError: Double? = nil, parameters: Parameters = .init()) {
        self.parameters = parameters
        period = 1 / rate
        decay = exp(-period / parameters.windowTau)
        setAttitudeDecimation()
        self.offset = offset
        self.offsetError = offsetError
        adoptedError = offsetError
    }

    /// Starts from an offset learnt before (µT), with its standard error (µT) and field strength (µT).
    public mutating func restore(offset: Vector3, offsetError: Double?, radius: Double) {
        self.offset = offset
        self.offsetError = offsetError
        adoptedError = offsetError
        self.radius = radius
        candidate = nil
    }

    /// The accuracy of the calibrated field now.
    public var accuracy: MagneticFieldAccuracy {
        guard let offsetError else { return .uncalibrated }
        guard currentFieldFits else { return .low }
        if offsetError <= parameters.highOffsetError { return .high }
        return offsetError <= parameters.mediumOffsetError ? .medium : .low
    }

    /// Follows readings now `rate` Hz apart, keeping what the window holds: its sums are scaled so
    /// that the window spans the same time in readings of the new rate (a window thrown away would
    /// have to be gathered again, turning the device, before the next fit).
    public mutating func setRate(_ rate: Double) {
        let scale = period * rate
        sxx *= scale; sxy *= scale; sxz *= scale; sx *= scale; syy *= scale; syz *= scale; sy *= scale
        szz *= scale; sz *= scale; s1 *= scale
        bx *= scale; by *= scale; bz *= scale; b1 *= scale; yy *= scale
        period = 1 / rate
        decay = exp(-period / parameters.windowTau)
        // The attitude's sums are left as they are: the spread and the earth frame's estimate are ratios
        // of them, their weight counts readings taken at most `independentSampleRate` a second at
        // either rate, and a window of two rates only weighs its two parts a little differently.
        setAttitudeDecimation()
    }

    private mutating func setAttitudeDecimation() {
        let ratio = (1 / (period * parameters.independentSampleRate)).rounded(.up)
        attitudeDecimation = ratio >= 2 ? Int(min(ratio, 1e6)) : 1
        attitudeDecay = exp(-Double(attitudeDecimation) * period / parameters.windowTau)
    }

    /// Whether the next reading's attitude is used (the others' may be left out: nil).
    public var takesAttitude: Bool { attitudeCountdown <= 1 }

    /// Feeds a raw reading (µT), with the device's attitude when it was taken if one is known
    /// (a unit quaternion, device → a frame fixed to the earth, from the gyroscope and the
    /// accelerometer alone); returns the reading with the hard-iron offset removed.
    public mutating func calibrate(_ m: Vector3, attitude: Quaternion? = nil) -> Vector3 {
        // Readings from before and after the offset changed (a magnet attached, removed) lie on two
        // different spheres; a window that mixes them fits neither. A jump of the field strength
        // starts a new window (at most once per window time, as a wrong offset makes the strength
        // swing while the device turns).
        // The strengths are compared squared, and the window's is its root mean square (not its
        // mean: they differ by σ²/2μ for readings of mean μ and spread σ): no square root per reading.
        let calibrated = m - offset
        let normSquared = calibrated.squaredLength
        sinceReset += period
        if windowMeanSquare > 0 && sinceReset >= parameters.windowTau
            && !Self.within(parameters.resetThreshold, of: windowMeanSquare, normSquared)
        {
            resetWindow()
        }
        windowMeanSquare = windowMeanSquare > 0 ? windowMeanSquare * decay + normSquared * (1 - decay) : normSquared
        accumulate(m)
        attitudeCountdown -= 1
        if attitudeCountdown <= 0 {
            attitudeCountdown = attitudeDecimation
            accumulate(m, attitude: attitude)
        }
        sinceEvaluation += period
        if sinceEvaluation >= parameters.evaluationInterval {
            candidateAge += sinceEvaluation
            sinceEvaluation = 0
            evaluate()
        }
        if sinceEvaluation == 0 {
            // The offset may just have changed.
            let recalibrated = m - offset
            currentFieldFits = radius > 0 && Self.within(0.1, of: radius * radius, recalibrated.squaredLength)
            return recalibrated
        }
        currentFieldFits = radius > 0 && Self.within(0.1, of: radius * radius, normSquared)
        return calibrated
    }

    /// Whether a strength is within `fraction` of a reference one, both given squared (µT²): |n − r| ≤
    /// fraction · r.
    @inline(__always)
    private static func within(_ fraction: Double, of referenceSquared: Double, _ normSquared: Double) -> Bool {
        let low = 1 - fraction, high = 1 + fraction
        return normSquared >= low * low * referenceSquared && normSquared <= high * high * referenceSquared
    }

    private mutating func resetWindow() {
        sxx = 0; sxy = 0; sxz = 0; sx = 0; syy = 0; syz = 0; sy = 0; szz = 0; sz = 0; s1 = 0
        bx = 0; by = 0; bz = 0; b1 = 0; yy = 0
        attitudeWeight = 0; fieldSum = .zero; fieldSquareSum = 0; attitudeSum = .zero; rotatedSum = .zero
        sinceReset = 0
        windowMeanSquare = 0
        // A weak change seen in readings before the jump is not confirmed by readings after it.
        candidate = nil
    }

    @inline(__always)
    private mutating func accumulate(_ m: Vector3) {
        let k = decay
        let px = 2 * m.x, py = 2 * m.y, pz = 2 * m.z
        let y = m.x * m.x + m.y * m.y + m.z * m.z
        sxx = sxx * k + px * px; sxy = sxy * k + px * py; sxz = sxz * k + px * pz; sx = sx * k + px
        syy = syy * k + py * py; syz = syz * k + py * pz; sy = sy * k + py
        szz = szz * k + pz * pz; sz = sz * k + pz; s1 = s1 * k + 1
        bx = bx * k + px * y; by = by * k + py * y; bz = bz * k + pz * y; b1 = b1 * k + y
        yy = yy * k + y * y
    }

    /// Decays the attitude's sums by one step and adds the reading if its attitude is known (and
    /// finite: a NaN would poison the sums until the next reset).
    private mutating func accumulate(_ m: Vector3, attitude: Quaternion?) {
        let k = attitudeDecay
        attitudeWeight *= k; fieldSum = fieldSum * k; fieldSquareSum *= k
        attitudeSum = attitudeSum * k; rotatedSum = rotatedSum * k
        guard let attitude, (attitude.w + attitude.x + attitude.y + attitude.z).isFinite else { return }
        let r = attitude.rotationMatrix
        attitudeWeight += 1
        fieldSum = fieldSum + m
        fieldSquareSum += m.squaredLength
        attitudeSum = attitudeSum + r
        rotatedSum = rotatedSum + r * m
    }

    /// Solves the window's normal equations by Cholesky; adopts the fit if it passes every test.
    private mutating func evaluate() {
        // Effective number of samples in the window; fewer than a second's worth proves nothing.
        guard s1 * period >= 1 else { return }
        let a = (sxx, sxy, sxz, sx, syy, syz, sy, szz, sz, s1)
        // Cholesky A = L Lᵀ.
        let l00 = a.0.squareRoot(); guard l00 > 0 else { return }
        let l10 = a.1 / l00, l20 = a.2 / l00, l30 = a.3 / l00
        let d11 = a.4 - l10 * l10; guard d11 > 0 else { return }
        let l11 = d11.squareRoot()
        let l21 = (a.5 - l20 * l10) / l11, l31 = (a.6 - l30 * l10) / l11
        let d22 = a.7 - l20 * l20 - l21 * l21; guard d22 > 0 else { return }
        let l22 = d22.squareRoot()
        let l32 = (a.8 - l30 * l20 - l31 * l21) / l22
        let d33 = a.9 - l30 * l30 - l31 * l31 - l32 * l32; guard d33 > 0 else { return }
        let l33 = d33.squareRoot()
        // Forward then back substitution for x = A⁻¹ b.
        let f0 = bx / l00
        let f1 = (by - l10 * f0) / l11
        let f2 = (bz - l20 * f0 - l21 * f1) / l22
        let f3 = (b1 - l30 * f0 - l31 * f1 - l32 * f2) / l33
        let x3 = f3 / l33
        let x2 = (f2 - l32 * x3) / l22
        let x1 = (f1 - l21 * x2 - l31 * x3) / l11
        let x0 = (f0 - l10 * x1 - l20 * x2 - l30 * x3) / l00
        let center = Vector3(x: x0, y: x1, z: x2)
        let r2 = x3 + center.squaredLength
        guard r2 > 0 else { return }
        let r = r2.squareRoot()
        guard r >= parameters.minimumRadius && r <= parameters.maximumRadius else { return }
        guard radius == 0 || abs(r - radius) <= parameters.radiusTolerance * radius else { return }

        // Residual of y = |m|² per sample, then in µT (dy ≈ 2r dr).
        let rss = yy - 2 * (x0 * bx + x1 * by + x2 * bz + x3 * b1) + f0 * f0 + f1 * f1 + f2 * f2 + f3 * f3
        let dof = max(s1 - 4, 1)
        let sigmaY = max(rss, 0) / dof
        let residual = sigmaY.squareRoot() / (2 * r)
        guard residual <= parameters.maximumResidual * r else { return }

        // Standard errors of the centre: σ_y² · diag(A⁻¹), A⁻¹'s diagonal from L⁻¹'s columns, scaled
        // from the window's sample count to its count of independent samples.
        let i00 = 1 / l00, i11 = 1 / l11, i22 = 1 / l22
        let i10 = -l10 * i00 / l11
        let i20 = -(l20 * i00 + l21 * i10) / l22, i21 = -l21 * i11 / l22
        let i30 = -(l30 * i00 + l31 * i10 + l32 * i20) / l33
        let i31 = -(l31 * i11 + l32 * i21) / l33, i32 = -l32 * i22 / l33
        let vx = i00 * i00 + i10 * i10 + i20 * i20 + i30 * i30
        let vy = i11 * i11 + i21 * i21 + i31 * i31
        let vz = i22 * i22 + i32 * i32
        let dependence = max(1, 1 / (period * parameters.independentSampleRate))
        let error = (sigmaY * max(vx, vy, vz) * dependence).squareRoot()
        guard error <= parameters.acceptedOffsetError else { return }

        let current = offset
        let meanSquare = (b1 - (current.x * sx + current.y * sy + current.z * sz) + current.squaredLength * s1) / s1
        let currentX3 = meanSquare - current.squaredLength
        let currentRSS = yy - 2 * (current.x * bx + current.y * by + current.z * bz + currentX3 * b1)
            + quadratic(x: (current.x, current.y, current.z, currentX3))
        let currentResidual = (max(currentRSS, 0) / dof).squareRoot() / (2 * meanSquare.squareRoot())
        let sphere = Estimate(center: center, error: error)
        let replaces: Bool
        if let earth = earthFrameFit() {
            replaces = evidenceReplaces(
                current: current, sphere: sphere, earth: earth, clearlyBetter: currentResidual - residual > parameters.replacementMargin)
        } else {
            // Without the attitude only the sphere speaks: replace the offset only if the new one
            // explains the window clearly better than the current one (a magnet attached or removed);
            // a window fit wanders by a few µT with the field's small non-uniformities, and following
            // that would only add heading noise. A better determined fit of the same sphere refines
            // it: only a new lowest standard error moves it, so it settles rather than wanders.
            let refines = adoptedError.map { error < $0 } ?? false
            replaces = currentResidual - residual > parameters.replacementMargin || (refines && residual <= currentResidual)
        }
        if replaces {
            candidate = nil
            offset = center
            radius = r
            offsetError = error
            adoptedError = error
        } else if currentResidual <= parameters.maximumResidual * r {
            // The fit confirms the current offset, to within the distance between the two.
            radius = meanSquare.squareRoot()
            offsetError = max(error, (center - current).length)
        }
    }

    /// An estimate of the offset, µT, with its standard error (the largest axis's), µT.
    private struct Estimate: Sendable, Codable, Equatable {
        var center: Vector3
        var error: Double
    }

    /// Whether the window's evidence replaces the current offset by the sphere fit's centre, where
    /// the readings came with the attitude: two estimates from different properties of the field
    /// (its strength for the sphere, its direction in the earth frame for the other) must agree
    /// within their standard errors, and the current offset must lie outside both's. A weak offset
    /// (a magnet a few cm away: a few µT) is then learnt where the motion determines it to a fraction
    /// of its size, and otherwise not at all: never from one fit that a bend of the field indoors, a
    /// magnet moving nearby or a window mixing two offsets pulled aside, since these pull the two
    /// fits apart. A fit that agrees with the other and is better determined than the one adopted
    /// refines the offset, as without the attitude.
    private mutating func evidenceReplaces(current: Vector3, sphere: Estimate, earth: Estimate, clearlyBetter: Bool) -> Bool {
        let z = parameters.significance
        guard earth.error <= parameters.acceptedOffsetError, agree(sphere, earth) else { return false }
        // A misfit of the current offset beyond the field's non-uniformity is a magnet attached or
        // removed: no need to wait.
        if clearlyBetter { return true }
        if let adoptedError, sphere.error < adoptedError, (sphere.center - current).length <= z * adoptedError { return true }
        let moved = (sphere.center - current).length > z * max(sphere.error, parameters.systematicError)
            && (earth.center - current).length > z * max(earth.error, parameters.systematicError)
        guard moved else { return false }
        // A weak change must be seen again in a window of other readings: a bend of the field where the
        // device was, or the turns it happened to make, pull one window's fits aside together, but
        // not the next window's the same way; a magnet stays. A window time later the first window
        // weighs e⁻¹ (37 %) of the second; a candidate not seen again within four is forgotten.
        if let waiting = candidate, candidateAge > 4 * parameters.windowTau || !agree(waiting, sphere) { candidate = nil }
        if candidate == nil {
            candidate = sphere
            candidateAge = 0
            return false
        }
        guard candidateAge >= parameters.windowTau else { return false }
        candidate = nil
        return true
    }

    /// Whether two estimates agree within `significance` standard errors of their difference, the
    /// systematic error included: the sphere and the earth frame are biased differently by what no
    /// window averages away (a 1 cm magnet's own soft iron, the field's bends), and two fits of one
    /// window by the same.
    private func agree(_ a: Estimate, _ b: Estimate) -> Bool {
        let s = parameters.systematicError
        return (a.center - b.center).length <= parameters.significance * (a.error * a.error + b.error * b.error + s * s).squareRoot()
    }

    /// The offset c that makes the window's calibrated fields R·(m − c) steadiest in the earth frame
    /// (least squares, with their mean: 6 unknowns, linear), with its standard error (the largest
    /// axis's), µT; nil where the window's rotation does not determine it. With R̄ the mean attitude,
    /// Σw|R(m − c) − ē|² is least at M c = Σw m / Σw − R̄ᵀ ΣwRm / Σw, M = I − R̄ᵀR̄ (its eigenvalues,
    /// 0…1, say how much the device turned about each axis); c's covariance is (s²/3) (W M)⁻¹ for a
    /// spread s over W readings (each at most `independentSampleRate` a second).
    private func earthFrameFit() -> Estimate? {
        let w = attitudeWeight
        guard w > 7 else { return nil }
        let meanAttitude = attitudeSum * (1 / w)
        let m = Matrix3.identity - meanAttitude.transposed.symmetricProduct(meanAttitude.transposed)
        // A device that barely turned about some axis leaves M near singular: no estimate.
        guard m.determinant > 1e-9 else { return nil }
        let inverse = m.symmetricInverse
        let center = inverse * (fieldSum * (1 / w) - meanAttitude.transposed * (rotatedSum * (1 / w)))
        guard let spread = earthFrameSpread(center: center), spread.isFinite else { return nil }
        // Per component: 3 per reading, 6 unknowns.
        let variance = spread * spread * w / (3 * w - 6)
        let largest = max(inverse.row0.x, inverse.row1.y, inverse.row2.z)
        return Estimate(center: center, error: (variance * largest / w).squareRoot())
    }

    /// The RMS distance, µT, of the window's fields R·(m − c) in the earth-fixed frame from their
    /// mean, over the readings that came with an attitude (nil: none did). Rotation keeps lengths,
    /// so Σw|R(m − c)|² is Σw|m − c|², and the mean is (ΣwRm − ΣwR·c) / Σw.
    private func earthFrameSpread(center c: Vector3) -> Double? {
        guard attitudeWeight > 1e-9 else { return nil }
        let meanSquare = (fieldSquareSum - 2 * c.dot(fieldSum)) / attitudeWeight + c.squaredLength
        let mean = (rotatedSum - attitudeSum * c) * (1 / attitudeWeight)
        return max(meanSquare - mean.squaredLength, 0).squareRoot()
    }

    /// xᵀ A x for the window's normal matrix A.
    private func quadratic(x: (Double, Double, Double, Double)) -> Double {
        let (a, b, c, d) = x
        return sxx * a * a + syy * b * b + szz * c * c + s1 * d * d
            + 2 * (sxy * a * b + sxz * a * c + sx * a * d + syz * b * c + sy * b * d + sz * c * d)
    }
}
