import MotionCore
import MotionDevices
import MotionFusion
import MotionWire

/// The pipeline's event stage: the screen's orientation and tilt, gestures and a 2-in-1's hinge from
/// the accelerometers, the proximity and light sensors' changes, a person's presence (an HID
/// human-presence sensor's, else the proximity sensor's), and the chip's on-body and significant-motion
/// events. It keeps the latest of each for
/// polls and new watchers, and hands each message it makes to `emit`; the pipeline sends. The
/// accelerometer's detectors are fed only while their streams are wanted (`follow(wanted:)`; the
/// screen's orientation and tilt while either is). No I/O: its tests drive it with samples.
struct EventStage {
    private var orientationDetector = OrientationDetector()
    private var tiltDetector = TiltDetector()
    private var gestures = GestureRecognizer()
    private var hingeEstimator: HingeEstimator?
    /// The base's accelerometer while the hinge is watched: its samples feed only the hinge.
    private(set) var baseAccelerometer: DeviceNumber?
    /// Light sensors whose readings are raw counts, not lux (their driver gives no scale).
    var vendorUnitLight: Set<DeviceNumber> = []
    private var orientation: OrientationMessage?
    private var tilt: TiltMessage?
    private var hinge: HingeMessage?
    private var gesture: GestureMessage?
    private var proximity: ProximityMessage?
    private var light: LightMessage?
    /// The presence reported, with the latest reading's distance and timestamp; nil while its sensor
    /// is stopped.
    private var presence: PresenceMessage?
    private var presenceDetector = PresenceDetector()
    /// What presence is told from (`follow(running:)`): the HID human-presence sensor while it runs,
    /// else the proximity sensor while it runs (present while near), else nothing.
    private var presenceSource: PresenceMessage.Source?
    /// Whether the chip says it is worn or held (its last on-body reading); nil until the first reading
    /// since `gesture` was wanted and the chip ran.
    private var onBody: Bool?
    /// Whether `significant_motion` is wanted (`follow(wanted:)`).
    private var feedsSignificantMotion = false
    /// Whether a chip's significant-motion sensor runs: the step detector's then makes no
    /// `SIGNIFICANT_MOTION`.
    private var chipSignificantMotion = false
    /// Whether the orientation and tilt detectors are fed (`follow(wanted:)`; none until the pipeline
    /// says): both while either stream is wanted, since they are the accelerometer's only streams that
    /// a resting capture serves (an HID hub's sends no sample until the device moves, and asking for
    /// the other changes no plan to reopen it), so the other has its value at once. Both are
    /// allocation-free updates of one gravity.
    private var feedsScreen = false
    /// Whether the gesture recognizer is fed: while `gesture` is wanted.
    private var feedsGestures = false

    /// Watches the hinge between the display's accelerometer and `base`'s (nil: no hinge), sampled at
    /// `rate` Hz.
    mutating func followHinge(base: DeviceNumber?, rate: @autoclosure () -> Double) {
        baseAccelerometer = base
        if base == nil {
            hingeEstimator = nil
            hinge = nil
        } else if hingeEstimator == nil {
            hingeEstimator = HingeEstimator(rate: rate())
        }
    }

    /// Follows which sensors are read (`running`: the kinds the plan's captures read, the base's
    /// accelerometer not counted). A stream whose sensor stopped has no latest value until it runs
    /// again, and the accelerometer's detectors start afresh: the first sample after a restart then
    /// sends its state, which a watcher that came while the sensor was stopped (and got no state
    /// when it asked) gets as its first, and no hysteresis or value from before the stop is kept
    /// (the device may have turned meanwhile).
    mutating func follow(running: Set<SensorKind>) {
        if !running.contains(.accelerometer) {
            (orientation, tilt, hinge, gesture) = (nil, nil, nil, nil)
            (orientationDetector, tiltDetector) = (OrientationDetector(), TiltDetector())
        }
        if !running.contains(.proximity) { proximity = nil }
        if !running.contains(.light) { light = nil }
        // Presence starts afresh when its source changes or stops: no debounce or state from another
        // sensor, or from before the stop, carries over.
        let source: PresenceMessage.Source? =
            running.contains(.humanPresence) ? .humanPresence : running.contains(.proximity) ? .proximity : nil
        if source != presenceSource { (presenceSource, presence, presenceDetector) = (source, nil, PresenceDetector()) }
        if !running.contains(.onBody) { onBody = nil }
        chipSignificantMotion = running.contains(.significantMotion)
    }

    /// Follows the streams someone wants (watched, or polled lately): the screen's detectors
    /// (orientation and tilt) are fed while either stream is, the gesture recognizer while its own
    /// is, and also while `significant_motion` is (its significant motion, where no chip gives one).
    /// One not fed has no latest value and starts afresh, as after a sensor's stop: the first
    /// sample once it is wanted again sends its state (the device may have turned meanwhile). The
    /// hinge follows `followHinge`; presence follows its sensor alone (`follow(running:)`), as
    /// proximity does: its sensor runs only while presence or proximity is wanted.
    mutating func follow(wanted: Set<StreamKind>) {
        (feedsScreen, feedsGestures) = (wanted.contains(.orientation) || wanted.contains(.tilt), wanted.contains(.gesture))
        feedsSignificantMotion = wanted.contains(.significantMotion)
        if !feedsScreen { (orientation, orientationDetector, tilt, tiltDetector) = (nil, OrientationDetector(), nil, TiltDetector()) }
        if !feedsGestures { (gesture, onBody) = (nil, nil) }
        if !feedsGestures && !feedsSignificantMotion { gestures = GestureRecognizer() }
    }

    /// Takes a sample: the display's accelerometer (`isWalking`: whether a walk is under way, which
    /// a pick-up is not), the base's (the hinge only), a proximity, light or human-presence sensor's,
    /// a chip's on-body or significant-motion reading. Each message made goes to `emit`: the hinge's
    /// angle with every display sample while it is watched, an event only when its state changed, a
    /// `SIGNIFICANT_MOTION` at each of the chip's events (or the step detector's significant motion).
    mutating func take(_ sample: SensorSample, isWalking: Bool, emit: (AnyServerMessage) -> Void) {
        let t = sample.timestamp
        switch sample.kind {
        case .accelerometer where sample.device == baseAccelerometer:
            hingeEstimator?.update(base: sample.vector)
        case .accelerometer:
            if hingeEstimator != nil {
                hingeEstimator!.update(display: sample.vector)
                if let angle = hingeEstimator!.angle, let mode = hingeEstimator!.mode {
                    hinge = HingeMessage(
                        timestamp: t, angle: angle, mode: mode, display: hingeEstimator!.displayForce.accelerationFromSpecificForce,
                        base: hingeEstimator!.baseForce.accelerationFromSpecificForce)
                    emit(.hinge(hinge!))
                }
            }
            // Sent when it differs from the latest value, which there is none of after a stop: a
            // state is sent even where the detector's first update gives the value it starts from.
            let gravity = sample.vector.accelerationFromSpecificForce
            if feedsScreen {
                let previous = orientation?.orientation
                orientation = OrientationMessage(timestamp: t, orientation: orientationDetector.update(gravity: gravity))
                if orientation!.orientation != previous { emit(.orientation(orientation!)) }
                let previousTilt = tilt?.tilt
                tilt = TiltMessage(timestamp: t, tilt: tiltDetector.update(gravity: gravity))
                if tilt!.tilt != previousTilt { emit(.tilt(tilt!)) }
            }
            // The step detector's significant motion makes `SIGNIFICANT_MOTION` where no chip does.
            let (sendsGestures, sendsSignificantMotion) = (feedsGestures, feedsSignificantMotion && !chipSignificantMotion)
            if sendsGestures || sendsSignificantMotion {
                gestures.update(specificForce: sample.vector, timestamp: t, isWalking: isWalking) { made in
                    if sendsSignificantMotion, made == .significantMotion {
                        emit(.significantMotion(SignificantMotionMessage(timestamp: t, source: .accelerometer)))
                    }
                    guard sendsGestures else { return }
                    gesture = GestureMessage(timestamp: t, gesture: made)
                    emit(.gesture(gesture!))
                }
            }
        case .proximity:
            let message = ProximityMessage(timestamp: t, near: sample.isNear, value: sample.vector.x)
            let changed = proximity?.near != message.near
            proximity = message
            if changed { emit(.proximity(message)) }
            if presenceSource == .proximity { takePresence(present: sample.isNear, attention: .nan, distance: .nan, at: t, emit: emit) }
        case .humanPresence where presenceSource == .humanPresence:
            // x presence 0 or 1, y distance (m), z attention (%), NaN where the sensor lacks the channel;
            // a reading without a presence tells nothing.
            guard sample.vector.x.isFinite else { break }
            takePresence(present: sample.vector.x >= 0.5, attention: sample.vector.z, distance: sample.vector.y, at: t, emit: emit)
        case .onBody where feedsGestures:
            // 1 worn or held, 0 not. The first reading is the state gestures start from: a gesture has no
            // current state to send a new watcher.
            guard sample.vector.x.isFinite else { break }
            let worn = sample.vector.x >= 0.5
            defer { onBody = worn }
            guard let was = onBody, was != worn else { break }
            gesture = GestureMessage(timestamp: t, gesture: worn ? .onBody : .offBody)
            emit(.gesture(gesture!))
        case .significantMotion where feedsSignificantMotion:
            // One sample of 1 per chip event (its event's instant or the read's: ChipFunctions says).
            guard sample.vector.x > 0 else { break }
            emit(.significantMotion(SignificantMotionMessage(timestamp: t, source: .significantMotion)))
        case .light:
            let unit: LightMessage.Unit = vendorUnitLight.contains(sample.device) ? .vendor : .lux
            let message = LightMessage(timestamp: t, illuminance: sample.vector.x, unit: unit)
            let changed = light.map { $0.illuminance != message.illuminance || $0.unit != message.unit } ?? true
            light = message
            if changed { emit(.light(message)) }
        case .humanPresence, .significantMotion, .onBody:
            break  // not this stream's source now, or not wanted
        case .gyroscope, .magnetometer, .compass, .pressure, .stepCounter, .activityRecognizer:
            break
        }
    }

    /// The latest value of one of this stage's streams: a poll's answer, or the state a new watcher
    /// of an event stream gets first.
    func latest(_ stream: StreamKind) -> AnyServerMessage? {
        switch stream {
        case .orientation: orientation.map { .orientation($0) }
        case .tilt: tilt.map { .tilt($0) }
        case .hinge: hinge.map { .hinge($0) }
        case .gesture: gesture.map { .gesture($0) }
        case .proximity: proximity.map { .proximity($0) }
        case .light: light.map { .light($0) }
        case .presence: presence.map { .presence($0) }
        default: nil
        }
    }

    /// When the held presence change is due (ns, the samples' clock): the instant to call
    /// `releaseHeldPresence(at:emit:)` at if no reading lets it out first; nil when none is held.
    var presenceDue: Int64? { presenceSource == nil ? nil : presenceDetector.heldUntil }

    /// Sends the held presence change if it is due at `t` (ns, the samples' clock), as a reading of the
    /// same state at `t` would: a sensor that reports only changes sends none.
    mutating func releaseHeldPresence(at t: Int64, emit: (AnyServerMessage) -> Void) {
        guard let source = presenceSource, let state = presenceDetector.release(at: t) else { return }
        presence = PresenceMessage(timestamp: t, present: state.present, attention: state.attention, distance: presenceDetector.distance, source: source)
        emit(.presence(presence!))
    }

    /// Takes one presence reading (`PresenceDetector.update`'s units): the latest keeps the state
    /// reported, with this reading's distance and timestamp; a state the detector reports is sent.
    private mutating func takePresence(present: Bool, attention: Double, distance: Double, at t: Int64, emit: (AnyServerMessage) -> Void) {
        guard let source = presenceSource else { return }
        let reported = presenceDetector.update(present: present, attention: attention, distance: distance, timestamp: t)
        guard let state = reported ?? presenceDetector.reported else { return }
        presence = PresenceMessage(timestamp: t, present: state.present, attention: state.attention, distance: presenceDetector.distance, source: source)
        if reported != nil { emit(.presence(presence!)) }
    }
}
