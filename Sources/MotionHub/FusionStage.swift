import MotionCore
import MotionDevices
import MotionFusion
import MotionWire

/// The pipeline's fusion stage: the IMU's raw streams (accelerometer, gyroscope, magnetometer) as
/// they come, and `motion`, their fusion, made at the pacing sensor's rate while someone wants it. It
/// keeps the latest of each for polls and says when a motion is due; the pipeline sends. The axis
/// checks (`AxisChecks`) and the place's magnetic field (`MagneticPlace`) are parts of their own that
/// it feeds. No I/O: its tests drive it with samples.
final class FusionStage {
    /// The fusion, in a box of its own: its state is kilobytes, and an optional struct held in a
    /// property is copied whole by optional chaining, `!= nil` and `!` (a memmove per sample, 8 % of
    /// the batched profile); through a class reference it is read and updated in place.
    fileprivate final class FusionBox {
        var fusion: SensorFusion
        /// Fixed for the fusion's life (it is made anew when the gyroscope comes or goes).
        let usesGyroscope: Bool

        init(_ fusion: SensorFusion) {
            self.fusion = fusion
            usesGyroscope = fusion.usesGyroscope
        }

        /// The motion now. Through an `inout` access: a plain read of the property, for a call that
        /// could in principle change it, is made on a copy.
        func motion(in frame: AttitudeReferenceFrame) -> DeviceMotion { Self.motion(of: &fusion, in: frame) }

        private static func motion(of fusion: inout SensorFusion, in frame: AttitudeReferenceFrame) -> DeviceMotion {
            fusion.deviceMotion(in: frame)
        }
    }

    private let calibration: SavedState<SensorFusion.Calibration>
    private var box: FusionBox?
    /// A copy of the fusion now, for what is not per sample (STATUS, saving the calibration).
    var fusion: SensorFusion? { box?.fusion }
    /// The gyroscope's and the magnetometer's axis checks, and their verdicts (for STATUS).
    var axes = AxisChecks()
    /// Called when the gyroscope becomes calibrated (true) or stops being so (false), for the log.
    var gyroscopeCalibrationChanged: (_ calibrated: Bool, _ uncertainty: Double) -> Void = { _, _ in }
    /// Whether the gyroscope counted as calibrated at the last look (nil: not looked yet).
    private var gyroscopeCalibrated: Bool?
    /// Motions made since the calibration was last looked at: every `calibrationLookInterval`th.
    private var motionsSinceCalibrationLook = 0
    private static let calibrationLookInterval = 64
    /// The sample (timestamp, period, ns) whose motion is still to be sent.
    private(set) var pendingMotion: (timestamp: Int64, period: Int64)?
    /// Measures the magnetometer's own rate once per fusion (`followMagnetometerRate`); nil once it has.
    private var magnetometerRate: MeasurementRate? = MeasurementRate()
    /// The latest heading of a sensor hub's own compass, degrees clockwise from magnetic north, while
    /// one runs: the motion's heading where no magnetometer is fused.
    private var compassHeading: Double?
    private var accelerometer: AccelerometerMessage?
    private var gyroscope: GyroscopeMessage?
    private var magnetometer: MagnetometerMessage?
    /// The place and its field: the declination that turns `xTrueNorthZVertical`, and the field's
    /// inclination that the fusion expects (each handed to the fusion whenever it changes).
    private(set) var place: MagneticPlace {
        didSet {
            box?.fusion.declination = place.declination * .pi / 180
            box?.fusion.expectedMagneticDip = place.expectedDip
        }
    }
    /// The declination (degrees east of true north) and the place configured (`LiveSettings`).
    var declinationSetting: (degrees: Double?, location: GeographicLocation?) {
        get { place.setting }
        set { place.setting = newValue }
    }

    /// A stage whose fusions start from, and give back, what `calibration` keeps; `place` gives the
    /// date the magnetic model is computed for.
    init(calibration: SavedState<SensorFusion.Calibration>, place: MagneticPlace = MagneticPlace()) {
        self.calibration = calibration
        self.place = place
    }

    /// Computes the place's field again where it is a month old (`MagneticPlace.refresh`).
    func refreshGeomagneticField() { place.refresh() }

    /// Follows the sensors there are: `rate` of each kind running (Hz; nil: not running), and whether
    /// anyone wants motion. Every time constant of the fusion is in seconds and counted in samples of
    /// those rates: made for the 1 kHz a client asked for, a 285.7 Hz IMU's low-passes, rest detection
    /// and bias estimator ran 3.5 times slower.
    func follow(motionNeeded: Bool, rate: (SensorKind) -> Double?) {
        if rate(.compass) == nil { compassHeading = nil }
        // Nobody wants motion: the attitude goes stale the moment the sensors stop (a poll minutes
        // later used to get the old attitude against the new pose, 1 g of user acceleration for a
        // second). What was learnt is kept for the next fusion.
        if !motionNeeded, let idle = box?.fusion {
            calibration.save(idle.calibration)
            box = nil
            pendingMotion = nil
        }
        // The fusion follows the sensors there are: a gyroscope unplugged (or plugged in) while motion
        // is watched makes a new one, which keeps the calibration learnt so far.
        if motionNeeded, let accelerometerRate = rate(.accelerometer), box?.usesGyroscope != (rate(.gyroscope) != nil) {
            if let box { calibration.keep(box.fusion.calibration) }
            place.fusionStarts()
            var fresh = SensorFusion(
                gyroscopeRate: rate(.gyroscope), accelerometerRate: accelerometerRate, magnetometerRate: rate(.magnetometer),
                declination: place.declination)  // degrees here; the property is in radians
            if let saved = calibration.value { fresh.restore(saved) }
            fresh.expectedMagneticDip = place.expectedDip
            box = FusionBox(fresh)
            pendingMotion = nil
            axes.fusionStarts(usesGyroscope: fresh.usesGyroscope, fieldPointsDown: place.field.map { $0.inclination > 0 })
            magnetometerRate = MeasurementRate()
        } else if let box, let accelerometerRate = rate(.accelerometer) {
            // A capture reopened at another rate (a faster client came, or the last one left).
            let running = box.fusion.imuRates
            let gyroscopeRate = rate(.gyroscope) ?? accelerometerRate
            if abs(running.gyroscope / gyroscopeRate - 1) > 1e-6 || abs(running.accelerometer / accelerometerRate - 1) > 1e-6 {
                box.fusion.setIMURates(gyroscope: rate(.gyroscope), accelerometer: accelerometerRate)
            }
        }
    }

    /// Every sensor stopped: the raw streams have no latest value until they run again.
    func sensorsStopped() {
        (accelerometer, gyroscope, magnetometer) = (nil, nil, nil)
    }

    /// Takes an accelerometer, gyroscope, magnetometer or compass sample, `period` ns after the
    /// previous one of its kind: returns the raw stream's message (none for a compass).
    func take(_ sample: SensorSample, period: Int64) -> AnyServerMessage? {
        let t = sample.timestamp
        switch sample.kind {
        case .accelerometer:
            box?.fusion.update(sample)
            axes.accelerometer(sample.vector)
            // Without a gyroscope, motion is made at the accelerometer's rate.
            if box?.usesGyroscope == false { pendingMotion = (t, period) }
            accelerometer = AccelerometerMessage(timestamp: t, acceleration: sample.vector.accelerationFromSpecificForce)
            return .accelerometer(accelerometer!)
        case .gyroscope:
            box?.fusion.update(sample)
            axes.gyroscope(sample.vector, at: t)
            gyroscope = GyroscopeMessage(timestamp: t, rotationRate: sample.vector)
            // Motion is made at the gyroscope's rate, once the other samples of the same read (the
            // magnetometer's, often after the gyroscope's in a scan) are fused too.
            if box != nil, accelerometer != nil { pendingMotion = (t, period) }
            return .gyroscope(gyroscope!)
        case .magnetometer:
            box?.fusion.update(sample)
            // A polled magnetometer's measurement read again (`ChangeInstant`) says nothing of its rate.
            if !sample.isRepeat { followMagnetometerRate(at: t) }
            if axes.wantsMagnetometer, let box, box.fusion.calibrator.accuracy >= .medium, let field = box.fusion.calibratedMagneticField,
                let rate = gyroscope?.rotationRate
            {
                axes.magnetometer(calibratedField: field, rotationRate: rate, at: t)
            }
            magnetometer = MagnetometerMessage(timestamp: t, magneticField: sample.vector)
            return .magnetometer(magnetometer!)
        case .compass:
            compassHeading = sample.vector.x
            return nil
        case .proximity, .light, .pressure, .stepCounter, .activityRecognizer, .significantMotion, .humanPresence, .onBody:
            return nil
        }
    }

    /// Measures the magnetometer's own rate once per fusion (`MeasurementRate`) and, 20 % or more off
    /// the rate the fusion was made for, makes the fusion follow it: its heading path's time constants
    /// are in seconds, and counted in samples at the wrong rate they stretched (an attached magnet was
    /// calibrated out 2.9 times slower).
    private func followMagnetometerRate(at t: Int64) {
        guard let box, let measured = magnetometerRate?.add(t) else { return }
        magnetometerRate = nil
        if abs(measured / box.fusion.magnetometerRate - 1) > 0.2 { box.fusion.setMagnetometerRate(measured) }
    }

    /// A motion due: its sample's timestamp and period (ns), and the fusion that makes it, held so that
    /// a replan while it is sent (a client leaving ends the fusion) cannot take the fusion away.
    struct DueMotion {
        var timestamp: Int64
        var period: Int64
        fileprivate let box: FusionBox
    }

    /// The motion due (`pendingMotion`, with a fusion to make it), now no longer due; every 64th time
    /// it also looks whether the gyroscope's calibration changed.
    func takePendingMotion() -> DueMotion? {
        guard let pending = pendingMotion, let box else { return nil }
        pendingMotion = nil
        motionsSinceCalibrationLook += 1
        if motionsSinceCalibrationLook >= Self.calibrationLookInterval, box.usesGyroscope {
            motionsSinceCalibrationLook = 0
            let sigma = box.fusion.filter.gyroscopeBiasSigma
            let calibrated = sigma <= StatusReply.Calibration.calibratedUncertainty
            if calibrated != gyroscopeCalibrated {
                gyroscopeCalibrated = calibrated
                gyroscopeCalibrationChanged(calibrated, sigma)
            }
        }
        return DueMotion(timestamp: pending.timestamp, period: pending.period, box: box)
    }

    /// The motion now in `frame`, once the fusion has had the samples it needs.
    func motion(in frame: AttitudeReferenceFrame) -> MotionMessage? {
        guard let box, accelerometer != nil, !box.usesGyroscope || gyroscope != nil else { return nil }
        return message(of: box, in: frame)
    }

    func motion(_ due: DueMotion, in frame: AttitudeReferenceFrame) -> MotionMessage { message(of: due.box, in: frame) }

    private func message(of box: FusionBox, in frame: AttitudeReferenceFrame) -> MotionMessage {
        let motion = box.motion(in: frame)
        let a = motion.attitude
        var message = MotionMessage(
            timestamp: motion.timestamp, frame: motion.referenceFrame,
            attitude: AttitudeMessage(quaternion: a.quaternion, roll: a.roll, pitch: a.pitch, yaw: a.yaw, rotationMatrix: a.rotationMatrix),
            gravity: motion.gravity, userAcceleration: motion.userAcceleration, rotationRate: motion.rotationRate,
            magneticField: CalibratedFieldMessage(field: motion.magneticField, accuracy: motion.magneticFieldAccuracy),
            heading: motion.heading, unavailable: motion.unavailable)
        // No magnetometer fused, but a sensor hub's own compass: its heading, the one thing it gives.
        if message.heading == nil, motion.referenceFrame.isNorthReferenced, let compassHeading {
            message.heading = Units.degreesWithinOneTurn(compassHeading + (motion.referenceFrame == .xTrueNorthZVertical ? place.declination : 0))
            message.unavailable?.remove(.heading)
            if message.unavailable == [] { message.unavailable = nil }
        }
        return message
    }

    /// The latest value of one of this stage's streams (`motion` in `frame`), for a poll.
    func latest(_ stream: StreamKind, frame: AttitudeReferenceFrame) -> AnyServerMessage? {
        switch stream {
        case .motion: motion(in: frame).map { .motion($0) }
        case .accelerometer: accelerometer.map { .accelerometer($0) }
        case .gyroscope: gyroscope.map { .gyroscope($0) }
        case .magnetometer: magnetometer.map { .magnetometer($0) }
        default: nil
        }
    }
}
