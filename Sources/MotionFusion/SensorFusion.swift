#if canImport(Glibc)
import Glibc
#endif
import MotionCore

/// The fusion core: takes `SensorSample`s of any kind, in any order, each on its own timestamp, and
/// gives the device motion in any reference frame.
///
/// It calibrates the magnetometer (hard iron), runs the orientation filter and keeps the latest
/// readings to report gravity, user acceleration, bias-free rotation rate and the calibrated field.
/// Its whole state is `Codable`: saving it and restoring it into a new instance continues exactly
/// where it stopped (calibration survives a restart).
public struct SensorFusion: Sendable, Codable, Equatable {
    /// The orientation filter (gyroscope, accelerometer, magnetometer).
    public private(set) var filter: OrientationFilter
    /// The orientation filter of a machine without a gyroscope; `nil` when there is one.
    public private(set) var gyroscopeFree: GyroscopeFreeFilter?
    /// Whether it was made for a gyroscope (else it fuses the accelerometer and magnetometer alone).
    /// (Stored: testing the optional `gyroscopeFree` copied its 1 kB.)
    public let usesGyroscope: Bool
    /// The magnetometer's hard-iron calibration.
    public private(set) var calibrator: MagnetometerCalibrator
    /// The magnetometer's soft-iron correction, applied after the hard-iron offset.
    public private(set) var softIron: SoftIronCalibrator
    /// Magnetic declination, radians east of true north (for `xTrueNorthZVertical`).
    public var declination: Double
    /// The dip of the Earth's field where the device is, rad, from the World Magnetic Model (nil: not
    /// known): a new field far from it is not taken as the undisturbed one.
    public var expectedMagneticDip: Double? {
        didSet {
            filter.expectedMagneticDip = expectedMagneticDip
            gyroscopeFree?.expectedMagneticDip = expectedMagneticDip
        }
    }
    private var specificForce = Vector3.zero
    private var rotationRate = Vector3.zero
    private var magneticField = Vector3.zero
    /// The last magnetometer sample with its hard- and soft-iron offsets taken out, µT, device frame
    /// (nil before the first).
    public var calibratedMagneticField: Vector3? { hasMagnetometer ? magneticField : nil }
    private var hasMagnetometer = false
    /// Whether a magnetometer rate was given: one runs, though it may not have sampled yet.
    private var expectsMagnetometer = false
    /// The timestamp of the IMU sample the outputs belong to: the latest gyroscope sample's, or the
    /// accelerometer's where there is no gyroscope. Not the latest of any sensor: a magnetometer polled
    /// on another clock edge would label an older attitude with its own, later time.
    private var timestamp: Int64 = 0
    // An accelerometer sample waits for the gyroscope to reach its instant: the inclination correction
    // compares it with the attitude at that instant. A scan hands on its samples in channel order,
    // the accelerometer's before the gyroscope's of the same instant; fused at once, it met the
    // attitude one gyroscope period old, and the live stream differed from `motionctl fuse` (which
    // hands on the gyroscope first) by 0.1–0.3° of inclination in motion.
    private var pendingAccelerometer: Vector3?
    private var pendingAccelerometerTimestamp: Int64 = 0
    private var lastGyroscopeTimestamp: Int64?
    /// The magnetometer's rate, Hz: the heading path (calibration, disturbance detection, correction)
    /// takes every sample. Not every n-th: a count-based decimation has a cliff (a magnetometer at
    /// 199.6 Hz and one at 202 Hz were fused at 199.6 and 101 Hz, with different detector windows, the
    /// heading on a magnet trial 2° apart), and the saving was 40 ns a sample.
    public private(set) var magnetometerRate: Double
    // Heading correction at the moment the corrected-arbitrary frame was fixed (after the heading's
    // initial convergence), so that frame starts where the uncorrected one does.
    private var correctedFrameOffset: Double?

    /// Creates the fusion core for sensors sampled at the given rates, Hz. Without a gyroscope
    /// (`gyroscopeRate` nil), the attitude comes from `GyroscopeFreeFilter`: tilt from the
    /// accelerometer and, with a magnetometer, a tilt-compensated heading.
    ///
    /// - Parameter declination: magnetic declination, degrees east of true north (default 0).
    public init(
        gyroscopeRate: Double?, accelerometerRate: Double? = nil, magnetometerRate: Double? = nil,
        declination: Double = 0, parameters: OrientationFilter.Parameters = .init(),
        calibration: MagnetometerCalibrator.Parameters = .init(), gyroscopeFreeParameters: GyroscopeFreeFilter.Parameters = .init()
    ) {
        let hasGyroscope = gyroscopeRate != nil
        usesGyroscope = hasGyroscope
        expectsMagnetometer = magnetometerRate != nil
        let imuRate = gyroscopeRate ?? accelerometerRate ?? 100
        // A rate that is no rate (a table's of too few samples, say) is the IMU's, not a crash.
        let magnetometerRate = magnetometerRate.flatMap { $0.isFinite && $0 > 0 ? $0 : nil } ?? imuRate
        let gyroscopeRate = gyroscopeRate ?? imuRate
        self.magnetometerRate = magnetometerRate
        filter = OrientationFilter(
            gyroscopeRate: gyroscopeRate, accelerometerRate: accelerometerRate, magnetometerRate: magnetometerRate,
            parameters: parameters)
        calibrator = MagnetometerCalibrator(rate: magnetometerRate, parameters: calibration)
        softIron = SoftIronCalibrator(rate: magnetometerRate)
        self.declination = declination * .pi / 180
        if hasGyroscope == false {
            gyroscopeFree = GyroscopeFreeFilter(
                accelerometerRate: accelerometerRate ?? imuRate, magnetometerRate: magnetometerRate, parameters: gyroscopeFreeParameters)
        }
    }

    /// What the fusion core has learnt about the sensors, to carry over a restart (or a change of rates).
    public struct Calibration: Sendable, Codable, Equatable {
        /// Gyroscope bias, rad/s, and its standard deviation, rad/s.
        public var gyroscopeBias: Vector3
        public var gyroscopeBiasSigma: Double
        /// Magnetometer hard-iron offset, µT, its standard error (nil: none yet) and the field strength, µT.
        public var magnetometerOffset: Vector3
        public var magnetometerOffsetError: Double?
        public var fieldStrength: Double
        /// Magnetometer soft-iron correction, row by row (nil: none estimated; absent from older saves).
        public var magnetometerSoftIron: [Double]?
        /// Gyroscope scale-factor error per axis, dimensionless, and its standard deviation (nil:
        /// absent from older saves, learnt afresh).
        public var gyroscopeScale: Vector3?
        public var gyroscopeScaleSigma: Double?

        public init(
            gyroscopeBias: Vector3, gyroscopeBiasSigma: Double, magnetometerOffset: Vector3, magnetometerOffsetError: Double?,
            fieldStrength: Double, magnetometerSoftIron: [Double]? = nil, gyroscopeScale: Vector3? = nil,
            gyroscopeScaleSigma: Double? = nil
        ) {
            self.gyroscopeBias = gyroscopeBias
            self.gyroscopeBiasSigma = gyroscopeBiasSigma
            self.magnetometerOffset = magnetometerOffset
            self.magnetometerOffsetError = magnetometerOffsetError
            self.fieldStrength = fieldStrength
            self.magnetometerSoftIron = magnetometerSoftIron
            self.gyroscopeScale = gyroscopeScale
            self.gyroscopeScaleSigma = gyroscopeScaleSigma
        }
    }

    /// The calibration learnt so far.
    public var calibration: Calibration {
        Calibration(
            gyroscopeBias: filter.gyroscopeBias, gyroscopeBiasSigma: filter.gyroscopeBiasSigma,
            magnetometerOffset: calibrator.offset, magnetometerOffsetError: calibrator.offsetError,
            fieldStrength: calibrator.radius, magnetometerSoftIron: softIron.isEstimated ? softIron.matrix.rowMajor : nil,
            gyroscopeScale: filter.gyroscopeScale, gyroscopeScaleSigma: filter.gyroscopeScaleSigma)
    }

    /// Follows a magnetometer that measures at `rate` Hz rather than the rate the fusion was made for
    /// (a polled one measures at its own rate, whatever it is read at, and its repeats are not fused):
    /// every time constant of the heading path is in seconds, so its calibrators, disturbance
    /// detector and heading correction are made for that rate, keeping all they learnt (the rate is
    /// measured once the device moves: started again, the calibrators lost the turning they had
    /// seen, and an attached magnet's offset took that much longer to fit); the attitude goes on.
    public mutating func setMagnetometerRate(_ rate: Double) {
        guard rate.isFinite, rate > 0, usesGyroscope else { return }
        magnetometerRate = rate
        filter.setMagnetometerRate(rate)
        calibrator.setRate(rate)
        softIron.setRate(rate)
    }

    /// The gyroscope's and the accelerometer's rates the fusion is made for, Hz (the gyroscope's is
    /// the accelerometer's where there is none).
    public var imuRates: (gyroscope: Double, accelerometer: Double) {
        if let gyroscopeFree { return (gyroscopeFree.accelerometerRate, gyroscopeFree.accelerometerRate) }
        return (1 / filter.gyroscopePeriod, 1 / filter.accelerometerPeriod)
    }

    /// Follows a gyroscope and an accelerometer now sampled at other rates, Hz (a capture reopened
    /// for a faster client): the orientation filter's time constants are in seconds but counted in
    /// samples, so it is made for the new rates, keeping the attitude, heading and calibration.
    public mutating func setIMURates(gyroscope gyroscopeRate: Double?, accelerometer accelerometerRate: Double) {
        guard accelerometerRate.isFinite, accelerometerRate > 0 else { return }
        if let gyroscopeFree {
            self.gyroscopeFree = gyroscopeFree.atAccelerometerRate(accelerometerRate)
        } else if let gyroscopeRate, gyroscopeRate.isFinite, gyroscopeRate > 0 {
            filter = filter.atRates(gyroscope: gyroscopeRate, accelerometer: accelerometerRate)
        }
    }

    /// Starts from a calibration learnt before (the attitude itself starts afresh).
    public mutating func restore(_ calibration: Calibration) {
        filter.setGyroscopeCalibration(
            bias: calibration.gyroscopeBias, sigma: calibration.gyroscopeBiasSigma,
            scale: calibration.gyroscopeScale, scaleSigma: calibration.gyroscopeScaleSigma)
        calibrator.restore(offset: calibration.magnetometerOffset, offsetError: calibration.magnetometerOffsetError, radius: calibration.fieldStrength)
        if let m = calibration.magnetometerSoftIron, m.count == 9 {
            softIron.restore(matrix: Matrix3(rowMajor: m))
        }
    }

    /// Fuses one sample (proximity and light samples are ignored, and so are samples with a non-finite
    /// component, which would poison the filters' state for good, and repeats, a polled sensor's
    /// previous measurement read again: no news, which fused would count as a new sample). Allocates
    /// nothing.
    @inlinable
    public mutating func update(_ sample: SensorSample) {
        // Inlined, so that the caller hands on the fields in registers: a sample just built, read
        // back by a wider load than it was stored with, stalled store forwarding.
        guard !sample.isRepeat else { return }
        update(sample.kind, vector: sample.vector, timestamp: sample.timestamp)
    }

    /// Fuses one sample given by its fields: vector in the kind's SI unit, timestamp in ns.
    @usableFromInline
    mutating func update(_ kind: SensorKind, vector: Vector3, timestamp sampleTimestamp: Int64) {
        // Finite components whose square overflows (1e154 and up: a garbage scale from a remote iiod)
        // would make every low-pass they reach infinite, and then NaN for good.
        guard vector.squaredLength.isFinite else { return }
        switch kind {
        case .gyroscope:
            guard usesGyroscope else { return }
            timestamp = sampleTimestamp
            rotationRate = vector
            filter.update(gyroscope: vector, timestamp: sampleTimestamp)
            lastGyroscopeTimestamp = sampleTimestamp
            if let pending = pendingAccelerometer, pendingAccelerometerTimestamp <= sampleTimestamp {
                pendingAccelerometer = nil
                filter.update(accelerometer: pending, timestamp: pendingAccelerometerTimestamp)
            }
        case .accelerometer:
            specificForce = vector
            if !usesGyroscope {
                timestamp = sampleTimestamp
                gyroscopeFree?.update(accelerometer: vector)
            } else if let last = lastGyroscopeTimestamp, sampleTimestamp <= last {
                filter.update(accelerometer: vector, timestamp: sampleTimestamp)
            } else {
                // At most one waits: a gyroscope that stopped (or runs slower) holds up only one sample.
                if let pending = pendingAccelerometer { filter.update(accelerometer: pending, timestamp: pendingAccelerometerTimestamp) }
                pendingAccelerometer = vector
                pendingAccelerometerTimestamp = sampleTimestamp
            }
        case .magnetometer:
            // A field counts once the filter took one: one read before the tilt was known (the first
            // sample after a resume or a restart) would give a heading of 0°.
            let knowsAttitude = calibrator.takesAttitude && usesGyroscope && filter.knowsTilt
            let offsetBefore = calibrator.offset
            let hardIronCorrected = calibrator.calibrate(vector, attitude: knowsAttitude ? filter.attitudeWithoutMagnetometer : nil)
            if calibrator.offset != offsetBefore, usesGyroscope {
                filter.magnetometerCalibrationChanged()
            }
            // Only undisturbed readings teach the soft-iron fit (a magnet nearby is not an ellipsoid).
            magneticField = calibrator.currentFieldFits
                ? softIron.calibrate(hardIronCorrected) : softIron.matrix * hardIronCorrected
            if !usesGyroscope {
                gyroscopeFree?.update(magnetometer: magneticField, timestamp: sampleTimestamp)
                hasMagnetometer = gyroscopeFree?.hasHeading ?? true
                if correctedFrameOffset == nil { correctedFrameOffset = gyroscopeFree?.headingCorrection }
                return
            }
            filter.update(magnetometer: magneticField, timestamp: sampleTimestamp)
            hasMagnetometer = filter.knowsHeading
            if correctedFrameOffset == nil && filter.hasConvergedHeading { correctedFrameOffset = filter.headingCorrection }
        case .proximity, .light, .pressure, .compass, .stepCounter, .activityRecognizer, .significantMotion, .humanPresence, .onBody:
            break
        }
    }

    /// Device → earth (z up) without the magnetometer's heading: the gyroscope's arbitrary heading, or
    /// without a gyroscope the tilt alone.
    public var attitudeWithoutMagnetometer: Quaternion { gyroscopeFree?.tilt ?? filter.attitudeWithoutMagnetometer }

    /// Device → East-North-Up, from whichever filter runs (not normalised for output, unlike `attitude(in:)`).
    public var eastNorthUpAttitude: Quaternion { gyroscopeFree?.attitude ?? filter.attitude }

    /// The device → reference quaternion in `frame`. Without a magnetometer every frame is the
    /// arbitrary one.
    public func attitude(in frame: AttitudeReferenceFrame) -> Attitude {
        let withoutMagnetometer = attitudeWithoutMagnetometer
        guard hasMagnetometer else { return Attitude(quaternion: withoutMagnetometer) }
        let headingCorrection = gyroscopeFree?.headingCorrection ?? filter.headingCorrection
        let enu = eastNorthUpAttitude
        let q: Quaternion
        switch frame {
        case .xArbitraryZVertical where usesGyroscope:
            q = withoutMagnetometer
        case .xArbitraryZVertical, .xArbitraryCorrectedZVertical:
            // Without a gyroscope the arbitrary frame is the corrected one: only the compass gives a yaw.
            let offset = correctedFrameOffset ?? headingCorrection
            q = Attitude.yawRotation(headingCorrection - offset) * withoutMagnetometer
        case .xMagneticNorthZVertical:
            // East-North-Up → North-West-Up: (e, n, u) ↦ (n, −e, u), a −90° turn about up.
            q = Attitude.yawRotation(-.pi / 2) * enu
        case .xTrueNorthZVertical:
            // Magnetic north lies `declination` east of true north.
            q = Attitude.yawRotation(-.pi / 2 - declination) * enu
        }
        return Attitude(quaternion: q.normalized)
    }

    /// The device motion now, with the attitude in `frame`.
    public func deviceMotion(in frame: AttitudeReferenceFrame = .xArbitraryZVertical) -> DeviceMotion {
        let attitude = attitude(in: frame)
        // Up in device coordinates is the third row of device → earth; gravity points the other way.
        let upright = gyroscopeFree?.upDirection ?? filter.attitudeWithoutMagnetometer.rotationMatrix.row2
        let gravity = upright * -1
        let acceleration = specificForce.accelerationFromSpecificForce
        var heading: Double? = nil
        if frame.isNorthReferenced && hasMagnetometer {
            // Azimuth of the device's top edge (y): its components in the north frame (x north, y west).
            let top = attitude.quaternion.rotate(Vector3(x: 0, y: 1, z: 0))
            heading = Units.degreesWithinOneTurn(atan2(-top.y, top.x) * 180 / .pi)
        }
        var unavailable = UnavailableOutputs.missing(gyroscope: usesGyroscope, magnetometer: hasMagnetometer || expectsMagnetometer)
        if !frame.isNorthReferenced { unavailable.remove(.heading) }
        return DeviceMotion(
            timestamp: timestamp, referenceFrame: frame, attitude: attitude, gravity: gravity,
            userAcceleration: specificForce == .zero ? .zero : acceleration - gravity,
            rotationRate: usesGyroscope ? filter.correctedRotationRate(rotationRate) : .zero,
            magneticField: magneticField, magneticFieldAccuracy: hasMagnetometer ? calibrator.accuracy : .uncalibrated,
            heading: heading, unavailable: unavailable)
    }
}
