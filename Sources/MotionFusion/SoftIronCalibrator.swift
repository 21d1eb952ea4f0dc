#if canImport(Glibc)
import Glibc
#endif
import MotionCore

/// Estimates the magnetometer's soft-iron distortion online, where the data supports it: a
/// least-squares ellipsoid fit over a long window of hard-iron-corrected readings.
///
/// Soft iron (the device's magnetically soft parts bending the Earth's field, and unequal axis
/// gains) turns the sphere of readings into an ellipsoid. Its correction is the symmetric matrix
/// that maps the ellipsoid back onto a sphere; it is normalised to determinant 1, so that it
/// changes directions and the axes' relative gains but not the mean field strength. An ellipsoid
/// has nine parameters and needs the device turned through most directions: a fit is used only
/// when the window's directions cover the sphere (`minimumCoverage`), its centre agrees with the
/// hard-iron offset, the distortion it finds is plausible, and two successive fits agree.
/// Distortion below `minimumDistortion` is left uncorrected (the fit's own noise is of that order).
///
/// Parameters:
/// - `windowTau` 120 s: time constant of the window (soft iron belongs to the device: it changes
///   only when the device does, so a long window costs nothing and averages the field's non-uniformity);
/// - `evaluationInterval` 2 s: how often the fit is solved;
/// - `minimumCoverage` 0.15: smallest eigenvalue of the window's mean of u·uᵀ over reading directions
///   u (1/3 for directions spread over the whole sphere, 0 for turns about a single axis);
/// - `minimumDistortion` 0.04: smallest deviation of the correction's gains from 1 worth correcting:
///   on real data from a calibrated magnetometer (BROAD's) the fit still finds 1.5–2.6 %, changing
///   from window to window — the indoor field's non-uniformity, not soft iron;
/// - `maximumDistortion` 0.3: largest deviation believed to be soft iron (beyond: a disturbance);
/// - `maximumCentreOffset` 3 µT: the fit's centre must agree with the hard-iron offset to this;
/// - `minimumWindow` 20 s: effective seconds of readings before a first fit;
/// - `stabilityTolerance` 0.01: two successive fits must agree to this (Frobenius norm of the difference);
/// - `fitRate` 10 Hz: readings taken into the fit per second (the field's direction in the device
///   changes little in 0.1 s, and the window holds 1200 of them; every reading would cost 9×9 products).
public struct SoftIronCalibrator: Sendable, Codable, Equatable {
    /// Tuning, with units and defaults.
    public struct Parameters: Sendable, Codable, Equatable {
        public var windowTau = 120.0
        public var evaluationInterval = 2.0
        public var minimumCoverage = 0.15
        public var minimumDistortion = 0.04
        public var maximumDistortion = 0.3
        public var maximumCentreOffset = 3.0
        public var minimumWindow = 20.0
        public var stabilityTolerance = 0.01
        public var fitRate = 10.0
        /// The defaults.
        public init() {}
    }

    public let parameters: Parameters
    private(set) var period: Double
    /// Every `readingsPerFit`-th reading goes into the fit, whose window decays by `decay` per reading taken.
    private(set) var readingsPerFit: Int
    private(set) var decay: Double
    private var countdown = 0
    /// Weighted sums of φφᵀ (upper triangle, row by row) and φ, φ = (x², y², z², 2xy, 2xz, 2yz, 2x, 2y, 2z);
    /// the quadric φ·θ = 1 is fitted. Made once; updated in place.
    private var normal: [Double]
    private var rightSide: [Double]
    /// Weighted sums of u·uᵀ (xx, xy, xz, yy, yz, zz) for the reading directions u, and of the weights.
    private var directions: [Double]
    private var weight = 0.0
    private var sinceEvaluation = 0.0

    /// The correction applied to hard-iron-corrected readings (identity until a fit is accepted).
    public private(set) var matrix = Matrix3.identity
    /// Whether a fit has been accepted (the matrix may still be the identity: no distortion found).
    public private(set) var isEstimated = false
    /// The previous evaluation's fit, to check the next against.
    private var previousFit: Matrix3?

    static let unknowns = 9

    /// Creates a calibrator for readings at `rate` Hz.
    public init(rate: Double, parameters: Parameters = .init()) {
        self.parameters = parameters
        period = 1 / rate
        readingsPerFit = max(1, Int((rate / parameters.fitRate).rounded()))
        decay = exp(-period * Double(readingsPerFit) / parameters.windowTau)
        normal = Array(repeating: 0, count: Self.unknowns * (Self.unknowns + 1) / 2)
        rightSide = Array(repeating: 0, count: Self.unknowns)
        directions = Array(repeating: 0, count: 6)
    }

    /// Follows readings now `rate` Hz apart, keeping what the window holds: its sums are scaled so
    /// that the window spans the same time in readings taken at the new rate.
    public mutating func setRate(_ rate: Double) {
        let taken = max(1, Int((rate / parameters.fitRate).rounded()))
        let scale = (period * Double(readingsPerFit)) / (Double(taken) / rate)
        for i in normal.indices { normal[i] *= scale }
        for i in rightSide.indices { rightSide[i] *= scale }
        for i in directions.indices { directions[i] *= scale }
        weight *= scale
        period = 1 / rate
        readingsPerFit = taken
        decay = exp(-period * Double(readingsPerFit) / parameters.windowTau)
        countdown = min(countdown, readingsPerFit)
    }

    /// Starts from a correction learnt before.
    public mutating func restore(matrix: Matrix3) {
        self.matrix = matrix
        isEstimated = true
    }

    /// Feeds a hard-iron-corrected reading (µT) that fits the calibration (no disturbance); returns
    /// it corrected.
    public mutating func calibrate(_ m: Vector3) -> Vector3 {
        countdown -= 1
        if countdown <= 0 {
            countdown = readingsPerFit
            accumulate(m)
        }
        sinceEvaluation += period
        if sinceEvaluation >= parameters.evaluationInterval {
            sinceEvaluation = 0
            evaluate()
        }
        return matrix * m
    }

    private mutating func accumulate(_ m: Vector3) {
        let k = decay
        let phi = (m.x * m.x, m.y * m.y, m.z * m.z, 2 * m.x * m.y, 2 * m.x * m.z, 2 * m.y * m.z, 2 * m.x, 2 * m.y, 2 * m.z)
        withUnsafeBytes(of: phi) { raw in
            let p = raw.bindMemory(to: Double.self)
            normal.withUnsafeMutableBufferPointer { normal in
                rightSide.withUnsafeMutableBufferPointer { rightSide in
                    var index = 0
                    for i in 0..<Self.unknowns {
                        for j in i..<Self.unknowns {
                            normal[index] = normal[index] * k + p[i] * p[j]
                            index += 1
                        }
                        rightSide[i] = rightSide[i] * k + p[i]
                    }
                }
            }
        }
        let n = m.length
        guard n > 0 else { return }
        let u = m * (1 / n)
        directions.withUnsafeMutableBufferPointer { d in
            d[0] = d[0] * k + u.x * u.x
            d[1] = d[1] * k + u.x * u.y
            d[2] = d[2] * k + u.x * u.z
            d[3] = d[3] * k + u.y * u.y
            d[4] = d[4] * k + u.y * u.z
            d[5] = d[5] * k + u.z * u.z
        }
        weight = weight * k + 1
    }

    /// The index of (i, j), i ≤ j, in the packed upper triangle.
    @inline(__always)
    private static func packed(_ i: Int, _ j: Int) -> Int { i * unknowns - i * (i - 1) / 2 + (j - i) }

    private mutating func evaluate() {
        guard weight * period * Double(readingsPerFit) >= parameters.minimumWindow else { return }
        let w = 1 / weight
        let d = (directions[0] * w, directions[1] * w, directions[2] * w, directions[3] * w, directions[4] * w, directions[5] * w)
        let coverage = Matrix3(
            row0: Vector3(x: d.0, y: d.1, z: d.2), row1: Vector3(x: d.1, y: d.3, z: d.4), row2: Vector3(x: d.2, y: d.4, z: d.5))
        let spread = coverage.symmetricEigen.values
        guard min(spread.x, spread.y, spread.z) >= parameters.minimumCoverage else { return }
        guard let theta = solve() else { return }
        // The quadric xᵀAx + 2bᵀx = 1: centre −A⁻¹b, and (x − c)ᵀ (A / k) (x − c) = 1 with k = 1 + cᵀAc.
        let a = Matrix3(
            row0: Vector3(x: theta[0], y: theta[3], z: theta[4]),
            row1: Vector3(x: theta[3], y: theta[1], z: theta[5]),
            row2: Vector3(x: theta[4], y: theta[5], z: theta[2]))
        let b = Vector3(x: theta[6], y: theta[7], z: theta[8])
        let (values, vectors) = a.symmetricEigen
        guard values.x > 0, values.y > 0, values.z > 0 else { return }  // not an ellipsoid
        let centre = (a.symmetricInverse * b) * -1
        guard centre.length <= parameters.maximumCentreOffset else { return }
        // √A, normalised to determinant 1 (the scale k only sets the radius).
        let roots = Vector3(x: values.x.squareRoot(), y: values.y.squareRoot(), z: values.z.squareRoot())
        let scale = 1 / cbrt(roots.x * roots.y * roots.z)
        let gains = roots * scale
        let distortion = max(abs(gains.x - 1), abs(gains.y - 1), abs(gains.z - 1))
        guard distortion <= parameters.maximumDistortion else { return }
        let fit = Matrix3.symmetric(values: gains, vectors: vectors)
        // Two fits in a row must agree: a distortion the window's noise made changes from one to the next.
        defer { previousFit = fit }
        guard let previousFit, (fit - previousFit).frobeniusNorm <= parameters.stabilityTolerance else { return }
        isEstimated = true
        matrix = distortion < parameters.minimumDistortion ? .identity : fit
    }

    /// Solves the window's 9×9 normal equations by Cholesky; nil if they are singular. Allocates nothing.
    private func solve() -> InlineArray<9, Double>? {
        let n = Self.unknowns
        var l = InlineArray<81, Double>(repeating: 0)
        for i in 0..<n {
            for j in 0...i {
                var sum = normal[Self.packed(j, i)]
                for k in 0..<j { sum -= l[i * n + k] * l[j * n + k] }
                if i == j {
                    guard sum > 1e-12 * max(1, normal[Self.packed(i, i)]) else { return nil }
                    l[i * n + i] = sum.squareRoot()
                } else {
                    l[i * n + j] = sum / l[j * n + j]
                }
            }
        }
        var y = InlineArray<9, Double>(repeating: 0)
        for i in 0..<n {
            var sum = rightSide[i]
            for k in 0..<i { sum -= l[i * n + k] * y[k] }
            y[i] = sum / l[i * n + i]
        }
        var x = InlineArray<9, Double>(repeating: 0)
        for i in stride(from: n - 1, through: 0, by: -1) {
            var sum = y[i]
            for k in (i + 1)..<n { sum -= l[k * n + i] * x[k] }
            x[i] = sum / l[i * n + i]
        }
        return x
    }
}
