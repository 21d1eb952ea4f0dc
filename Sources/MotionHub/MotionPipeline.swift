import MotionCore
import MotionDevices
import MotionFusion
import MotionWire

/// Samples in, messages out: puts the captures' samples in one time order, fuses them, detects
/// orientation, tilt and the hinge, keeps the latest value of each stream for polls, and hands each
/// message to the fanout. Confined to the hub's event loop.
final class MotionPipeline {
    private let fanout: StreamFanout
    private let calibration: SavedState<SensorFusion.Calibration>
    /// Called after each sample is fused: a waiting poll may be answerable now.
    var sampleFused: () -> Void = {}
    /// Called when the gyroscope becomes calibrated (true) or stops being so (false), for the log.
    var gyroscopeCalibrationChanged: (_ calibrated: Bool, _ uncertainty: Double) -> Void = { _, _ in }
    /// Whether the gyroscope counted as calibrated at the last look (nil: not looked yet).
    private var gyroscopeCalibrated: Bool?
    /// Motion messages since the calibration was last looked at: every `calibrationLookInterval`th.
    private var motionsSinceCalibrationLook = 0
    private static let calibrationLookInterval = 64
    /// The fusion, in a box of its own: its state is kilobytes, and an optional struct held in a
    /// property is copied whole by optional chaining, `!= nil` and `!` (a memmove per sample, 8 % of
    /// the batched profile); through a class reference it is read and updated in place.
    private final class FusionBox {
        var fusion: SensorFusion
        /// Fixed for the fusion's life (it is made anew when the gyroscope comes or goes).
        let usesGyroscope: Bool

        init(_ fusion: SensorFusion) {
            self.fusion = fusion
            usesGyroscope = fusion.usesGyroscope
        }

        /// The gyroscope bias's standard deviation, rad/s (read in place, not on a copy of the fusion).
        var gyroscopeBiasSigma: Double { fusion.filter.gyroscopeBiasSigma }

        /// The motion now. Through an `inout` access: a plain read of the property, for a call that
        /// could in principle change it, is made on a copy.
        func motion(in frame: AttitudeReferenceFrame) -> DeviceMotion { Self.motion(of: &fusion, in: frame) }

        private static func motion(of fusion: inout SensorFusion, in frame: AttitudeReferenceFrame) -> DeviceMotion {
            fusion.deviceMotion(in: frame)
        }
    }

    private var box: FusionBox?
    /// A copy of the fusion now, for what is not per sample (STATUS, saving the calibration).
    var fusion: SensorFusion? { box?.fusion }
    private var orientation = OrientationDetector()
    private var tilt = TiltDetector()
    private var gestures = GestureRecognizer()
    /// Steps, activity, floors and their history.
    private var gait: GaitStage
    /// The steps and activities of the last week, and the count since the first start.
    var history: GaitHistory { gait.history }
    /// Changes to `history`: the hub saves it when this moved.
    var historyRevision: Int { gait.historyRevision }
    /// Metres per step; a new one applies to the distances sent from then on, the total's included.
    var stepLength: Double {
        get { gait.stepLength }
        set { gait.stepLength = newValue }
    }
    private var altimeter = AltitudeEstimator()
    private var hinge: HingeEstimator?
    /// The base's accelerometer while the hinge is watched: its samples feed only the hinge.
    private var baseAccelerometer: DeviceNumber?
    /// The latest value of each stream, for polls.
    private var latest = Snapshot(id: nil)
    /// The samples of all captures in one time order.
    private var merger = SampleMerger()
    /// Samples the merger let through, reused.
    private var merged: [SampleMerger.Entry] = []
    /// Whether `fuseMerged` is running (it is not entered twice).
    private var fusingMerged = false
    /// The sample (timestamp, period, ns) whose motion is still to be sent.
    private var pendingMotion: (timestamp: Int64, period: Int64)?
    /// The magnetometer's own rate, measured once per fusion (`followMagnetometerRate`).
    private var magnetometerRate = MeasurementRate()
    /// Whether the rate has been measured for this fusion.
    private var magnetometerRateMeasured = false
    /// The latest heading of a sensor hub's own compass, degrees clockwise from magnetic north, while
    /// one runs: the motion's heading where no magnetometer is fused.
    private var compassHeading: Double?
    /// Light sensors whose readings are raw counts, not lux (their driver gives no scale).
    var vendorUnitLight: Set<DeviceNumber> = []
    /// The sea-level pressure the altitude is computed for, kPa.
    var seaLevelPressure: Double {
        get { altimeter.parameters.seaLevelPressure }
        set { altimeter.parameters.seaLevelPressure = newValue }
    }
    /// Magnetic declination, degrees east of true north.
    var declination = LiveSettings.defaults.declination {
        didSet { box?.fusion.declination = declination * .pi / 180 }
    }

    init(fanout: StreamFanout, calibration: SavedState<SensorFusion.Calibration>, history: GaitHistory) {
        self.fanout = fanout
        self.calibration = calibration
        gait = GaitStage(history: history)
    }

    /// Follows a new capture plan: which capture paces the output, the hinge, and a fusion that uses
    /// the sensors there are (`motionNeeded`: whether anyone wants motion), at the rates their devices
    /// run at (`deviceRate`, Hz; the planned rate where it gives none). Every time constant of the
    /// fusion is in seconds and counted in samples of that rate: made for the 1 kHz a client asked
    /// for, a 285.7 Hz IMU's low-passes, rest detection and bias estimator ran 3.5 times slower.
    func follow(_ plan: CapturePlan, motionNeeded: Bool, deviceRate: (DeviceNumber) -> Double?) {
        baseAccelerometer = plan.baseAccelerometer
        let pace = plan.captures.first { $0.kinds.contains(.gyroscope) }?.device
            ?? plan.captures.first { $0.kinds.contains(.accelerometer) && $0.device != plan.baseAccelerometer }?.device
        if pace != merger.pace {
            merger.releaseAll(into: &merged)
            merger.pace = pace
            fuseMerged()
        }
        if let base = plan.baseAccelerometer, hinge == nil {
            hinge = HingeEstimator(rate: deviceRate(base) ?? plan.captures.first { $0.device == base }?.rate ?? CapturePlan.eventRate)
        } else if plan.baseAccelerometer == nil {
            hinge = nil
        }
        if plan.captures.isEmpty {
            latest = Snapshot(id: nil)
            gait.sensorsStopped()
        }
        func rate(_ kind: SensorKind) -> Double? { plan.captures.first { $0.kinds.contains(kind) }.map { deviceRate($0.device) ?? $0.rate } }
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
            var fresh = SensorFusion(
                gyroscopeRate: rate(.gyroscope), accelerometerRate: accelerometerRate, magnetometerRate: rate(.magnetometer),
                declination: declination)  // degrees here; the property is in radians
            if let saved = calibration.value { fresh.restore(saved) }
            box = FusionBox(fresh)
            pendingMotion = nil
            magnetometerRate = MeasurementRate()
            magnetometerRateMeasured = false
        } else if let box, let accelerometerRate = rate(.accelerometer) {
            // A capture reopened at another rate (a faster client came, or the last one left).
            let running = box.fusion.imuRates
            let gyroscopeRate = rate(.gyroscope) ?? accelerometerRate
            if abs(running.gyroscope / gyroscopeRate - 1) > 1e-6 || abs(running.accelerometer / accelerometerRate - 1) > 1e-6 {
                box.fusion.setIMURates(gyroscope: rate(.gyroscope), accelerometer: accelerometerRate)
            }
        }
    }

    /// Takes a sample of capture `device`, `period` ns after the previous one of its kind.
    func add(_ sample: SensorSample, period: Int64, from device: DeviceNumber) {
        merger.add(.init(sample: sample, period: period), from: device, into: &merged)
        fuseMerged()
    }

    /// Fuses what the merger let through. Re-entrant: fusing can answer a poll, which can replan and
    /// release held samples into `merged`; the loop running already takes them, in order, and none is
    /// fused twice (a `for … in merged` over a copy did both). Walking by index also keeps the
    /// array's storage unshared, so nothing is copied.
    private func fuseMerged() {
        guard !fusingMerged else { return }
        fusingMerged = true
        var next = 0
        while next < merged.count {
            let entry = merged[next]
            next += 1
            fuse(entry.sample, period: entry.period)
        }
        merged.removeAll(keepingCapacity: true)
        fusingMerged = false
    }

    private func fuse(_ sample: SensorSample, period: Int64) {
        let t = sample.timestamp
        // A later sample is about to be fused: the pending motion goes out first, stamped as it was.
        if let pending = pendingMotion, t > pending.timestamp { deliverPendingMotion() }
        if sample.kind == .accelerometer, sample.device == baseAccelerometer {
            hinge?.update(base: sample.vector)
            return
        }
        switch sample.kind {
        case .accelerometer:
            if hinge != nil {
                hinge!.update(display: sample.vector)
                if let angle = hinge!.angle, let mode = hinge!.mode {
                    let message = HingeMessage(timestamp: t, angle: angle, mode: mode)
                    latest.hinge = message
                    fanout.deliver(.hinge, timestamp: t, period: period) { _ in .hinge(message) }
                }
            }
            box?.fusion.update(sample)
            // Without a gyroscope, motion is produced at the accelerometer's rate.
            if box?.usesGyroscope == false { pendingMotion = (t, period) }
            let acceleration = sample.vector.accelerationFromSpecificForce
            let message = AccelerometerMessage(timestamp: t, acceleration: acceleration)
            latest.accelerometer = message
            fanout.deliver(.accelerometer, timestamp: t, period: period) { _ in .accelerometer(message) }
            let previous = orientation.state
            let state = orientation.update(gravity: acceleration)
            latest.orientation = OrientationMessage(timestamp: t, orientation: state)
            if state != previous { fanout.deliverEvent(.orientation, latest.orientation!) }
            let previousTilt = tilt.state
            let tiltState = tilt.update(gravity: acceleration)
            latest.tilt = TiltMessage(timestamp: t, tilt: tiltState)
            if tiltState != previousTilt { fanout.deliverEvent(.tilt, latest.tilt!) }
            let (pedometer, activity) = gait.update(specificForce: sample.vector, at: t)
            if let pedometer { fanout.deliverEvent(.pedometer, pedometer) }
            if let activity { fanout.deliverEvent(.activity, activity) }
            gestures.update(specificForce: sample.vector, timestamp: t, isWalking: gait.isWalking) { deliver($0, at: t) }
        case .gyroscope:
            box?.fusion.update(sample)
            let message = GyroscopeMessage(timestamp: t, rotationRate: sample.vector)
            latest.gyroscope = message
            fanout.deliver(.gyroscope, timestamp: t, period: period) { _ in .gyroscope(message) }
            // Motion is produced at the gyroscope's rate, once the other samples of the same read
            // (the magnetometer's, often after the gyroscope's in a scan) are fused too.
            if box != nil, latest.accelerometer != nil { pendingMotion = (t, period) }
        case .magnetometer:
            box?.fusion.update(sample)
            // A polled magnetometer's measurement read again (`ChangeInstant`) says nothing of its rate.
            if !sample.isRepeat { followMagnetometerRate(at: t) }
            let message = MagnetometerMessage(timestamp: t, magneticField: sample.vector)
            latest.magnetometer = message
            fanout.deliver(.magnetometer, timestamp: t, period: period) { _ in .magnetometer(message) }
        case .proximity:
            let message = ProximityMessage(timestamp: t, near: sample.isNear, value: sample.vector.x)
            let changed = latest.proximity?.near != message.near
            latest.proximity = message
            if changed { fanout.deliverEvent(.proximity, message) }
        case .light:
            let unit: LightMessage.Unit = vendorUnitLight.contains(sample.device) ? .vendor : .lux
            let message = LightMessage(timestamp: t, illuminance: sample.vector.x, unit: unit)
            let changed = latest.light.map { $0.illuminance != message.illuminance || $0.unit != message.unit } ?? true
            latest.light = message
            if changed { fanout.deliverEvent(.light, message) }
        case .compass:
            compassHeading = sample.vector.x
        case .pressure:
            guard let reading = altimeter.update(pressure: sample.vector.x, timestamp: t) else { break }
            if let pedometer = gait.update(altitude: reading.altitude, at: t) { fanout.deliverEvent(.pedometer, pedometer) }
            let message = AltitudeMessage(timestamp: t, pressure: reading.pressure, altitude: reading.altitude, precision: reading.precision)
            latest.altitude = message
            fanout.deliver(.altitude, timestamp: t, period: period) { _ in .altitude(message) }
        }
        sampleFused()
    }

    /// Measures the magnetometer's own rate once per fusion (`MeasurementRate`) and, 20 % or more off
    /// the rate the fusion was made for, makes the fusion follow it: its heading path's time constants
    /// are in seconds, and counted in samples at the wrong rate they stretched (an attached magnet was
    /// calibrated out 2.9 times slower).
    private func followMagnetometerRate(at t: Int64) {
        guard let box, !magnetometerRateMeasured, let measured = magnetometerRate.add(t) else { return }
        magnetometerRateMeasured = true
        if abs(measured / box.fusion.magnetometerRate - 1) > 0.2 { box.fusion.setMagnetometerRate(measured) }
    }

    /// Sends a gesture completed by the sample at `t`, and keeps it for polls.
    private func deliver(_ gesture: Gesture, at t: Int64) {
        let message = GestureMessage(timestamp: t, gesture: gesture)
        latest.gesture = message
        fanout.deliverEvent(.gesture, message)
    }

    /// Sends the motion of the last pacing sample, if not yet sent (each frame encoded once).
    func deliverPendingMotion() {
        guard let (t, period) = pendingMotion, let box else { return }
        pendingMotion = nil
        fanout.deliver(.motion, timestamp: t, period: period) { frame in .motion(message(box.motion(in: frame))) }
        motionsSinceCalibrationLook += 1
        if motionsSinceCalibrationLook >= Self.calibrationLookInterval, box.usesGyroscope {
            motionsSinceCalibrationLook = 0
            let sigma = box.gyroscopeBiasSigma
            let calibrated = sigma <= StatusReply.Calibration.calibratedUncertainty
            if calibrated != gyroscopeCalibrated {
                gyroscopeCalibrated = calibrated
                gyroscopeCalibrationChanged(calibrated, sigma)
            }
        }
    }

    /// The step count now (0 steps before the first).
    var latestPedometer: PedometerMessage { gait.pedometer }
    /// The activity reported last, while the accelerometer runs for it.
    var latestActivity: ActivityMessage? { gait.activity }
    /// The last altitude reading, while the pressure sensor runs.
    var latestAltitude: AltitudeMessage? { latest.altitude }

    /// The current state of an event stream, which a new watcher gets first.
    func currentEvent(of stream: StreamKind) -> (any ServerMessage)? {
        switch stream {
        case .proximity: latest.proximity
        case .orientation: latest.orientation
        case .tilt: latest.tilt
        case .pedometer: gait.pedometer
        case .activity: gait.activity
        case .light: latest.light
        default: nil
        }
    }

    /// The snapshot for a poll, if every stream asked for has a value from a running sensor.
    func snapshot(for poll: Request.Poll) -> Snapshot? {
        var snapshot = Snapshot(id: poll.id)
        func set<M>(_ field: WritableKeyPath<Snapshot, M?>, _ value: M?) -> Bool {
            snapshot[keyPath: field] = value
            return value != nil
        }
        func copy<M>(_ field: WritableKeyPath<Snapshot, M?>) -> Bool { set(field, latest[keyPath: field]) }
        for stream in poll.streams {
            let present = switch stream {
            case .motion: fusedMotion(in: poll.frame ?? .xArbitraryZVertical).map { snapshot.motion = $0 } != nil
            case .accelerometer: copy(\.accelerometer)
            case .gyroscope: copy(\.gyroscope)
            case .magnetometer: copy(\.magnetometer)
            case .proximity: copy(\.proximity)
            case .light: copy(\.light)
            case .orientation: copy(\.orientation)
            case .tilt: copy(\.tilt)
            case .hinge: copy(\.hinge)
            case .pedometer: set(\.pedometer, gait.pedometer)
            case .activity: set(\.activity, gait.activity)
            case .altitude: copy(\.altitude)
            case .gesture: copy(\.gesture)
            }
            guard present else { return nil }
        }
        return snapshot
    }

    /// The motion now, once the fusion has had the samples it needs.
    private func fusedMotion(in frame: AttitudeReferenceFrame) -> MotionMessage? {
        guard let box, latest.accelerometer != nil, !box.usesGyroscope || latest.gyroscope != nil else { return nil }
        return message(box.motion(in: frame))
    }

    private func message(_ motion: DeviceMotion) -> MotionMessage {
        let a = motion.attitude
        var message = MotionMessage(
            timestamp: motion.timestamp, frame: motion.referenceFrame,
            attitude: AttitudeMessage(quaternion: a.quaternion, roll: a.roll, pitch: a.pitch, yaw: a.yaw, rotationMatrix: a.rotationMatrix),
            gravity: motion.gravity, userAcceleration: motion.userAcceleration, rotationRate: motion.rotationRate,
            magneticField: CalibratedFieldMessage(field: motion.magneticField, accuracy: motion.magneticFieldAccuracy),
            heading: motion.heading, unavailable: motion.unavailable)
        // No magnetometer fused, but a sensor hub's own compass: its heading, the one thing it gives.
        if message.heading == nil, motion.referenceFrame.isNorthReferenced, let compassHeading {
            message.heading = Units.degreesWithinOneTurn(compassHeading + (motion.referenceFrame == .xTrueNorthZVertical ? declination : 0))
            message.unavailable?.remove(.heading)
            if message.unavailable == [] { message.unavailable = nil }
        }
        return message
    }
}
