#if canImport(Glibc)
import Glibc
#endif
import MotionCore

/// The attitude of a device with no gyroscope: tilt (pitch and roll) from the accelerometer and,
/// with a magnetometer, the heading from the field tilted into the horizontal plane (a
/// tilt-compensated compass), each low-passed so that it is steady in a hand.
///
/// Without a gyroscope nothing measures a turn, so the low-pass is the trade: a short time constant
/// follows a turn quickly and shakes with the hand, a long one is steady and lags. A large, lasting
/// change of direction is taken for a turn and followed with a short one (tilt and heading alike).
/// A magnet near the device is rejected as the gyroscope-aided filter rejects it
/// (`MagneticDisturbanceDetector`: the field's strength or dip leaves the learnt ones), so the heading
/// holds instead of swinging toward it. The dip is judged only while the tilt is steady (the specific
/// force of gravity's strength and direction): a field seen through a tilt that moves shows a dip
/// as wrong as the tilt, and judged on it the Earth's field was rejected whenever a hand moved the
/// device. While the tilt is not steady the heading follows the field with the short time constant,
/// as a per-sample compass (TRIAD: Black 1964; Shuster & Oh 1981) does, since the device is moving.
///
/// Parameters:
/// - `gravityTau` 0.2 s: time constant of the low-pass on the specific force (a turn of the screen
///   is reported within about 0.3 s, as a desktop's rotation needs);
/// - `headingTau` 0.5 s: time constant of the heading (a compass needle's settling);
/// - `turnThreshold` 8° and `turnTau` 0.05 s: a heading that stays that far from the field's on two
///   samples in a row, on the same side and not rejected as disturbed, is a turn, not noise (a consumer
///   magnetometer's heading wanders by 1–2° a sample), and is followed with the short time constant
///   until it is within a quarter of the threshold. A quarter turn is followed within 0.5 s, where
///   the heading's low-pass alone took seconds. A tilt is followed the same way
///   (`update(accelerometer:)`).
///
/// Each gain is made for the time since the previous magnetometer sample, not for a nominal rate: a
/// still chip polled for changes only delivers a few a second.
///
/// Frames as `OrientationFilter`'s: device frame in, device → earth (z up; x East, y North with a
/// magnetometer, else the heading is 0) out.
public struct GyroscopeFreeFilter: Sendable, Codable, Equatable {
    /// Tuning, with units and defaults.
    public struct Parameters: Sendable, Codable, Equatable {
        /// Time constant of the low-pass on the specific force, s (default 0.2).
        public var gravityTau = 0.2
        /// Time constant of the heading, s (default 0.5).
        public var headingTau = 0.5
        /// A heading error this large, on two samples in a row, is a turn, rad (default 8°).
        public var turnThreshold = 8 * Double.pi / 180
        /// Time constant of the heading while it follows a turn, s (default 0.05).
        public var turnTau = 0.05
        var magnetic = MagneticDisturbanceDetector.Parameters()

        /// The defaults.
        public init() {}
    }

    public let parameters: Parameters
    private var specificForce: LowPassFilter<Vector3>
    /// The accelerometer's rate the filter is made for, Hz.
    public var accelerometerRate: Double { 1 / specificForce.period }
    private var up = Vector3(x: 0, y: 0, z: 1)
    /// The specific force low-passed with `turnTau`, followed while the device tilts, and that
    /// low-pass's gain per accelerometer sample.
    private var quickForce: Vector3?
    private var quickGain: Double
    /// The cosines of `turnThreshold` and of a quarter of it, computed once, not per sample.
    private let turnCosine: Double
    private let settledCosine: Double
    /// Accelerometer samples in a row whose direction is `turnThreshold` or more from `up`.
    private var tiltingSamples = 0
    /// Whether the tilt follows a turn.
    private var followingTilt = false
    /// Whether the last specific force was gravity's alone, as far as can be told: of gravity's
    /// strength (within 10 %) and within `turnThreshold` of `up`, with no tilt being followed.
    private var tiltIsSteady = false
    private var heading = 0.0
    /// Whether a magnetometer reading has set the heading (none is taken before the tilt is known).
    public private(set) var hasHeading = false
    /// The previous magnetometer sample's time, ns.
    private var lastFieldTime: Int64?
    /// The side of the heading the field's was on at the previous sample, far enough for a turn (−1, 0, +1).
    private var turnSide = 0
    /// Whether the heading follows a turn.
    private var followingTurn = false
    private var magnetic: MagneticDisturbanceDetector
    private let magnetometerPeriod: Double

    /// A filter for an accelerometer and a magnetometer sampled at the given rates, Hz.
    public init(accelerometerRate: Double, magnetometerRate: Double? = nil, parameters: Parameters = .init()) {
        self.parameters = parameters
        specificForce = LowPassFilter(tau: parameters.gravityTau, period: 1 / accelerometerRate)
        quickGain = firstOrderGain(tau: parameters.turnTau, period: 1 / accelerometerRate)
        turnCosine = cos(parameters.turnThreshold)
        settledCosine = cos(parameters.turnThreshold / 4)
        magnetometerPeriod = 1 / (magnetometerRate ?? accelerometerRate)
        magnetic = MagneticDisturbanceDetector(parameters: parameters.magnetic, period: magnetometerPeriod)
    }

    /// The filter for an accelerometer now sampled at `accelerometerRate` Hz: the gravity low-pass is
    /// made for it, going on from its current output; the heading goes on.
    public func atAccelerometerRate(_ accelerometerRate: Double) -> GyroscopeFreeFilter {
        var next = self
        next.specificForce = specificForce.atPeriod(1 / accelerometerRate)
        next.quickGain = firstOrderGain(tau: parameters.turnTau, period: 1 / accelerometerRate)
        return next
    }

    /// The device's up direction in the device frame (unit vector): minus gravity.
    public var upDirection: Vector3 { up }

    /// Device → earth with yaw 0: CoreMotion's pitch then roll, from gravity alone.
    public var tilt: Quaternion {
        // up = (−sin roll · cos pitch, sin pitch, cos roll · cos pitch) for the attitude
        // yaw · pitch (about x) · roll (about y); docs/frames.md has the worked examples.
        let pitch = asin(max(-1, min(1, up.y)))
        let roll = atan2(-up.x, up.z)
        return Quaternion(angle: pitch, axis: Vector3(x: 1, y: 0, z: 0)) * Quaternion(angle: roll, axis: Vector3(x: 0, y: 1, z: 0))
    }

    /// Device → East-North-Up (needs magnetometer samples; until the first, the heading is 0).
    public var attitude: Quaternion { Quaternion(angle: heading, axis: Vector3(x: 0, y: 0, z: 1)) * tilt }

    /// The heading correction, rad: the turn about the vertical from the tilt frame to ENU.
    public var headingCorrection: Double { heading }

    /// Whether the magnetic field is currently judged disturbed.
    public var isMagneticFieldDisturbed: Bool { magnetic.isDisturbed }

    /// The dip of the Earth's field where the device is, rad (nil: not known), as `OrientationFilter`'s.
    public var expectedMagneticDip: Double? {
        get { magnetic.expectedDip }
        set { magnetic.expectedDip = newValue }
    }

    /// One accelerometer sample: specific force, m/s² (+9.81 up at rest).
    ///
    /// A tilt is followed as a turn of the heading is: a specific force of about gravity's strength
    /// (within 10 %: the device turns rather than accelerates) whose direction stays `turnThreshold`
    /// or more from `up` for two samples in a row is the device turning, and `up` then follows the
    /// specific force low-passed with `turnTau` until the two are within a quarter of the threshold.
    /// With the gravity low-pass alone a hand's turn of tens of °/s was followed 0.2 s late, its
    /// tilt that far behind (BROAD's slow-rotation trial with the gyroscope withheld: 15° of
    /// inclination). A hand's tremor and a consumer accelerometer's noise move the direction by a
    /// degree or two at most, so at rest nothing changes.
    public mutating func update(accelerometer acceleration: Vector3) {
        let mean = specificForce.update(acceleration)
        let length = mean.length
        guard length > 0 else { return }
        let quick = quickForce.map { $0 + (acceleration - $0) * quickGain } ?? acceleration
        quickForce = quick
        let strength = acceleration.length
        let cosine = strength > 0 ? acceleration.dot(up) / strength : 1
        let gravityStrong = abs(strength - Units.standardGravity) < 0.1 * Units.standardGravity
        let turning = gravityStrong && cosine < turnCosine
        tiltingSamples = turning ? tiltingSamples + 1 : 0
        if tiltingSamples >= 2 { followingTilt = true }
        tiltIsSteady = gravityStrong && cosine >= turnCosine && !followingTilt
        if followingTilt {
            let quickLength = quick.length
            guard quickLength > 0 else { return }
            up = quick * (1 / quickLength)
            if cosine >= settledCosine {
                followingTilt = false
                specificForce.settle(at: quick)
            }
            return
        }
        up = mean * (1 / length)
    }

    /// One magnetometer sample: the calibrated field, µT, at `timestamp` ns.
    public mutating func update(magnetometer field: Vector3, timestamp: Int64) {
        // Until the first accelerometer sample the tilt is not known, and a field tilted by a guess
        // would set the heading and the detector's reference wrong (GyroscopeFreeTests).
        guard field.squaredLength > 0, specificForce.hasInput else { return }
        // Seconds since the previous sample (the nominal period for the first, and after a gap of
        // more than a second, which says nothing of how long the field has held).
        // Saturating (`TimestampArithmetic`): a jump of any size either way is such a gap.
        let elapsed = lastFieldTime.map { timestamp.seconds(since: $0) } ?? magnetometerPeriod
        lastFieldTime = timestamp
        let period = elapsed > 0 && elapsed <= 1 ? elapsed : magnetometerPeriod
        let fieldEarth = tilt.rotate(field)
        // Horizontal field points North (+y of ENU): the heading that turns it there.
        let measured = atan2(fieldEarth.x, fieldEarth.y)
        guard hasHeading else {
            heading = measured
            hasHeading = true
            return
        }
        // No gyroscope tells whether the device turns, so a new steady field is accepted after the
        // detector's `newFieldTime` whether or not it turned (as if it always did).
        // A tilt that is not steady may be wrong by more than the detector's dip threshold (a hand's
        // turn, the low-pass behind it, or an acceleration taken for gravity), and a field seen
        // through it shows a dip that far off: judged on it, the Earth's field was rejected whenever
        // the device moved and the heading held while the device turned (BROAD with the gyroscope
        // withheld: 58° of heading error against 47° for a plain per-sample TRIAD). The dip is then
        // left out of the judgement; the field's strength, which no tilt changes, is still judged.
        let judged = tiltIsSteady ? fieldEarth : withLearntDip(fieldEarth)
        var trust = magnetic.update(fieldEarth: judged, rotation: MagneticDisturbanceDetector.alwaysTurning, period: period)
        // The detector judges a low-passed field; without a gyroscope to hold the heading, the few
        // samples before its verdict would already swing it, so each sample is judged on its own too.
        if magnetic.referenceNorm > 0, !magnetic.fitsReference(judged) { trust = 0 }
        let error = wrapAngle(measured - heading)
        // A field the detector rejects outright is no evidence of a turn (it still half-trusts the
        // first field until it has learnt it, 5 s: a turn then counts).
        if trust > 0 {
            let side = abs(error) > parameters.turnThreshold ? (error > 0 ? 1 : -1) : 0
            if side != 0, side == turnSide { followingTurn = true }
            if abs(error) < parameters.turnThreshold / 4 { followingTurn = false }
            turnSide = side
        }
        // A turn is followed at its own pace: the detector's half trust is for corrections of a field
        // it has not learnt yet, not for a heading already judged to have turned.
        // While the specific force is not gravity's alone the device moves, its heading with it: the
        // heading's long time constant, which averages a still device's magnetometer noise, would lag.
        let gain = (followingTurn || !tiltIsSteady) && trust > 0
            ? firstOrderGain(tau: parameters.turnTau, period: period) : trust * firstOrderGain(tau: parameters.headingTau, period: period)
        heading = wrapAngle(heading + gain * error)
    }

    /// `fieldEarth` (µT) with the learnt field's dip and its own strength and horizontal direction:
    /// what the detector may judge of a field seen through a tilt that is not known to better than
    /// its dip threshold (unchanged while no field is learnt, or with no horizontal part).
    private func withLearntDip(_ fieldEarth: Vector3) -> Vector3 {
        let norm = fieldEarth.length
        let horizontal = (fieldEarth.x * fieldEarth.x + fieldEarth.y * fieldEarth.y).squareRoot()
        guard magnetic.referenceNorm > 0, horizontal > 0 else { return fieldEarth }
        // The learnt field's cosine of dip; its sign (a field pointing down, north of the magnetic
        // equator) is the one seen, which no tilt error smaller than the dip can flip.
        let cosine = min(1, magnetic.referenceHorizontal / magnetic.referenceNorm)
        let h = norm * cosine / horizontal
        let vertical = norm * (1 - cosine * cosine).squareRoot()
        return Vector3(x: fieldEarth.x * h, y: fieldEarth.y * h, z: fieldEarth.z < 0 ? -vertical : vertical)
    }
}
