#if canImport(Glibc)
import Glibc
#endif
import MotionCore

/// Tells whether the magnetic field is the undisturbed one, by its norm and dip angle in the earth
/// frame compared with reference values learnt while undisturbed (the scheme of VQF, Laidig & Seel
/// 2023, §3.4), and decides how much the heading may be corrected.
///
/// Parameters (defaults are VQF's):
/// - `currentTau` 0.05 s: time constant of the low-pass on the field's norm and its direction in the
///   vertical plane (the dip of the mean direction, not the mean of the dips);
/// - `referenceTau` 20 s: time constant with which the references follow an undisturbed field;
/// - `normThreshold` 0.1: largest relative deviation of the norm;
/// - `dipThreshold` 10°: largest deviation of the dip angle (below 90°: it is tested by its cosine);
/// - `newFieldTime` 20 s: how long a steady new field must be seen, in motion, to be accepted;
/// - `newFieldFirstTime` 5 s: the same for the first field;
/// - `newFieldMinimumRate` 20 °/s: rotation needed for that time to count (a magnet moves with the device);
/// - `candidateTolerance` 0.1 s (2 × `currentTau`): a shorter disagreement pauses the new field's count
///   instead of restarting it (under vibration a sample or two cross the thresholds);
/// - `minimumUndisturbedTime` 0.5 s: how long the field must agree before it is trusted again;
/// - `maximumRejectionTime` 60 s: the longest a disturbance stops heading correction entirely;
/// - `rejectionFactor` 2: gain divisor after that, and the rate at which rejection time recovers.
struct MagneticDisturbanceDetector: Sendable, Codable, Equatable {
    struct Parameters: Sendable, Codable, Equatable {
        var currentTau = 0.05
        var referenceTau = 20.0
        var normThreshold = 0.1
        var dipThreshold = 10.0 * .pi / 180
        var newFieldTime = 20.0
        var newFieldFirstTime = 5.0
        var newFieldMinimumRate = 20.0 * .pi / 180
        var candidateTolerance = 0.1
        var minimumUndisturbedTime = 0.5
        var maximumRejectionTime = 60.0
        var rejectionFactor = 2.0
    }

    let parameters: Parameters
    private(set) var referenceGain: Double
    // The low-passed field as (norm, horizontal, down), µT: the dip as a direction in the vertical
    // plane, so that no sample needs an inverse sine or tangent (one took 10 % of the fusion's time).
    // Two directions are within `dipThreshold` when their angle is: their dot product is at least
    // cos(dipThreshold) times their lengths.
    private var fieldMean: LowPassFilter<Vector3>
    private let dipCosineSquared: Double
    /// The undisturbed field as (norm, horizontal, down), µT; norm 0 until one is known.
    private var reference = Vector3.zero
    /// The undisturbed field's norm, µT; 0 until one is known.
    var referenceNorm: Double { reference.x }
    /// The undisturbed field's horizontal part, µT; 0 until one is known.
    var referenceHorizontal: Double { reference.y }

    /// Forgets the undisturbed field, which was seen through a calibration that has since changed: the
    /// field now seen is learnt as the first one was (`newFieldFirstTime` of turning), not rejected
    /// as a disturbance for up to `maximumRejectionTime`.
    mutating func forgetReference() {
        reference = .zero
        isDisturbed = true
        undisturbedTime = 0
    }
    private(set) var isDisturbed = true
    /// The dip of the Earth's field where the device is, rad (the World Magnetic Model's inclination
    /// there; nil: not known). A new field whose dip is further than `dipThreshold` from it is not
    /// taken as the undisturbed one: a magnet beside the device when it starts, or one carried with
    /// it, is not learnt as the Earth's field. Its strength is not used: a calibrated magnetometer's
    /// scale is not the model's (BROAD's eleven development trials read 41–46 µT in Berlin, where the
    /// model gives about 50, while their dips, 67.5–71.7°, are within 4° of its 68°).
    var expectedDip: Double? {
        didSet { expectedDirection = expectedDip.map { Vector3(x: 1, y: cos($0), z: sin($0)) } }
    }
    private var expectedDirection: Vector3?
    private var undisturbedTime = 0.0
    private var rejectionTime: Double
    private var candidate = Vector3(x: -1, y: 0, z: 0)
    private var candidateTime = 0.0
    // How long the field has disagreed with the candidate, s.
    private var candidateMisfitTime = 0.0

    init(parameters: Parameters, period: Double) {
        self.parameters = parameters
        referenceGain = firstOrderGain(tau: parameters.referenceTau, period: period)
        fieldMean = LowPassFilter(tau: parameters.currentTau, period: period)
        let cosine = cos(parameters.dipThreshold)
        dipCosineSquared = cosine * cosine
        rejectionTime = parameters.maximumRejectionTime
    }

    /// The detector for samples now `period` s apart, going on from where this one is: what it has
    /// learnt (the undisturbed field's norm and dip, the candidate, the timers) is kept, only the
    /// coefficients counted in samples are made for the new period. Started afresh, it was disturbed
    /// until it learnt the field again, which in motion needs 5 s of turning: a device carried without
    /// turning had no heading correction for up to a minute.
    func atPeriod(_ period: Double) -> MagneticDisturbanceDetector {
        var next = self
        next.referenceGain = firstOrderGain(tau: parameters.referenceTau, period: period)
        next.fieldMean = fieldMean.atPeriod(period)
        return next
    }

    /// A rotation faster than any threshold, rad/s: for a device that cannot tell whether it turns.
    static let alwaysTurning = Vector3(x: .infinity, y: 0, z: 0)

    /// Feeds the field in the earth frame (µT) and the mean rotation rate (rad/s, a vector: its
    /// length is compared squared); returns the factor (0…1) by which the heading correction's gain
    /// is multiplied.
    mutating func update(fieldEarth: Vector3, rotation: Vector3, period: Double) -> Double {
        let norm = fieldEarth.length
        guard norm > 0 else { return 0 }
        let current = fieldMean.update(Self.normAndDip(fieldEarth, norm: norm))
        let p = parameters

        if agree(current, reference) {
            undisturbedTime += period
            if undisturbedTime >= p.minimumUndisturbedTime {
                isDisturbed = false
                reference = reference + (current - reference) * referenceGain
            }
        } else {
            undisturbedTime = 0
            isDisturbed = true
        }

        // A field that stays steady while the device turns is the new undisturbed field.
        if agree(current, candidate) {
            candidateMisfitTime = 0
            if rotation.squaredLength >= p.newFieldMinimumRate * p.newFieldMinimumRate { candidateTime += period }
            candidate = candidate + (current - candidate) * referenceGain
            if isDisturbed && (candidateTime >= p.newFieldTime || (reference.x == 0 && candidateTime >= p.newFieldFirstTime))
                && expectedDirection.map({ agreeInDip(candidate, $0) }) ?? true
            {
                reference = candidate
                isDisturbed = false
                undisturbedTime = p.minimumUndisturbedTime
            }
        } else {
            candidateMisfitTime += period
            if candidateMisfitTime >= p.candidateTolerance {
                candidateTime = 0
                candidate = current
            }
        }

        if isDisturbed {
            if rejectionTime <= p.maximumRejectionTime {
                rejectionTime += period
                return 0
            }
            return 1 / p.rejectionFactor
        }
        rejectionTime = max(rejectionTime - p.rejectionFactor * period, 0)
        return 1
    }

    /// Whether one field, unfiltered, in the earth frame (µT), agrees with the undisturbed one in norm
    /// and dip (false while none is known).
    func fitsReference(_ fieldEarth: Vector3) -> Bool {
        let norm = fieldEarth.length
        return norm > 0 && agree(Self.normAndDip(fieldEarth, norm: norm), reference)
    }

    /// (norm, horizontal, down) of a field in the earth frame (z up) whose norm is `norm`, µT.
    @inline(__always)
    private static func normAndDip(_ fieldEarth: Vector3, norm: Double) -> Vector3 {
        Vector3(x: norm, y: (fieldEarth.x * fieldEarth.x + fieldEarth.y * fieldEarth.y).squareRoot(), z: -fieldEarth.z)
    }

    /// Whether two fields agree: norms within `normThreshold` of `b`'s, dips within `dipThreshold`.
    @inline(__always)
    private func agree(_ a: Vector3, _ b: Vector3) -> Bool {
        abs(a.x - b.x) < parameters.normThreshold * b.x && agreeInDip(a, b)
    }

    /// Whether the dip directions (y, z) of two fields are within `dipThreshold` of each other.
    @inline(__always)
    private func agreeInDip(_ a: Vector3, _ b: Vector3) -> Bool {
        let dot = a.y * b.y + a.z * b.z
        return dot > 0 && dot * dot >= dipCosineSquared * (a.y * a.y + a.z * a.z) * (b.y * b.y + b.z * b.z)
    }
}
