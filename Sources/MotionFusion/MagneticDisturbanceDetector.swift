#if canImport(Glibc)
import Glibc
#endif
import MotionCore

/// Tells whether the magnetic field is the undisturbed one, by its norm and dip angle in the earth
/// frame compared with reference values learnt while undisturbed (the scheme of VQF, Laidig & Seel
/// 2023, §3.4), and decides how much the heading may be corrected.
///
/// Parameters (defaults are VQF's):
/// - `currentTau` 0.05 s: time constant of the low-pass on norm and dip;
/// - `referenceTau` 20 s: time constant with which the references follow an undisturbed field;
/// - `normThreshold` 0.1: largest relative deviation of the norm;
/// - `dipThreshold` 10°: largest deviation of the dip angle;
/// - `newFieldTime` 20 s: how long a steady new field must be seen, in motion, to be accepted;
/// - `newFieldFirstTime` 5 s: the same for the first field;
/// - `newFieldMinimumRate` 20 °/s: rotation needed for that time to count (a magnet moves with the device);
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
        var minimumUndisturbedTime = 0.5
        var maximumRejectionTime = 60.0
        var rejectionFactor = 2.0
    }

    let parameters: Parameters
    private(set) var referenceGain: Double
    private var normDipMean: LowPassFilter<Vector3>
    /// The undisturbed field's norm (µT) and dip angle (rad); norm 0 until one is known.
    private(set) var referenceNorm = 0.0
    private(set) var referenceDip = 0.0
    private(set) var isDisturbed = true
    /// The dip of the Earth's field where the device is, rad (the World Magnetic Model's inclination
    /// there; nil: not known). A new field whose dip is further than `dipThreshold` from it is not
    /// taken as the undisturbed one: a magnet beside the device when it starts, or one carried with
    /// it, is not learnt as the Earth's field. Its strength is not used: a calibrated magnetometer's
    /// scale is not the model's (BROAD's eleven development trials read 41–46 µT in Berlin, where the
    /// model gives about 50, while their dips, 67.5–71.7°, are within 4° of its 68°).
    var expectedDip: Double?
    private var undisturbedTime = 0.0
    private var rejectionTime: Double
    private var candidateNorm = -1.0
    private var candidateDip = 0.0
    private var candidateTime = 0.0

    init(parameters: Parameters, period: Double) {
        self.parameters = parameters
        referenceGain = firstOrderGain(tau: parameters.referenceTau, period: period)
        normDipMean = LowPassFilter(tau: parameters.currentTau, period: period)
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
        next.normDipMean = normDipMean.atPeriod(period)
        return next
    }

    /// Feeds the field in the earth frame (µT) and the mean rotation rate (rad/s); returns the factor
    /// (0…1) by which the heading correction's gain is multiplied.
    mutating func update(fieldEarth: Vector3, rotationRate: Double, period: Double) -> Double {
        let norm = fieldEarth.length
        guard norm > 0 else { return 0 }
        let current = normDipMean.update(Vector3(x: norm, y: -asin(max(-1, min(1, fieldEarth.z / norm))), z: 0))
        let p = parameters

        if abs(current.x - referenceNorm) < p.normThreshold * referenceNorm && abs(current.y - referenceDip) < p.dipThreshold {
            undisturbedTime += period
            if undisturbedTime >= p.minimumUndisturbedTime {
                isDisturbed = false
                referenceNorm += referenceGain * (current.x - referenceNorm)
                referenceDip += referenceGain * (current.y - referenceDip)
            }
        } else {
            undisturbedTime = 0
            isDisturbed = true
        }

        // A field that stays steady while the device turns is the new undisturbed field.
        if abs(current.x - candidateNorm) < p.normThreshold * candidateNorm && abs(current.y - candidateDip) < p.dipThreshold {
            if rotationRate >= p.newFieldMinimumRate { candidateTime += period }
            candidateNorm += referenceGain * (current.x - candidateNorm)
            candidateDip += referenceGain * (current.y - candidateDip)
            if isDisturbed && (candidateTime >= p.newFieldTime || (referenceNorm == 0 && candidateTime >= p.newFieldFirstTime))
                && expectedDip.map({ abs(candidateDip - $0) < p.dipThreshold }) ?? true
            {
                referenceNorm = candidateNorm
                referenceDip = candidateDip
                isDisturbed = false
                undisturbedTime = p.minimumUndisturbedTime
            }
        } else {
            candidateTime = 0
            candidateNorm = current.x
            candidateDip = current.y
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
}
