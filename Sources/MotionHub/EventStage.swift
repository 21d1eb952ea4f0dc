import MotionCore
import MotionDevices
import MotionFusion
import MotionWire

/// The pipeline's event stage: the screen's orientation and tilt, gestures and a 2-in-1's hinge from
/// the accelerometers, and the proximity and light sensors' changes. It keeps the latest of each for
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
    }

    /// Follows the streams someone wants (watched, or polled lately): the screen's detectors
    /// (orientation and tilt) are fed while either stream is, the gesture recognizer while its own
    /// is. One not fed has no latest value and starts afresh, as after a sensor's stop: the first
    /// sample once it is wanted again sends its state (the device may have turned meanwhile). The
    /// hinge follows `followHinge`.
    mutating func follow(wanted: Set<StreamKind>) {
        (feedsScreen, feedsGestures) = (wanted.contains(.orientation) || wanted.contains(.tilt), wanted.contains(.gesture))
        if !feedsScreen { (orientation, orientationDetector, tilt, tiltDetector) = (nil, OrientationDetector(), nil, TiltDetector()) }
        if !feedsGestures { (gesture, gestures) = (nil, GestureRecognizer()) }
    }

    /// Takes a sample: the display's accelerometer (`isWalking`: whether a walk is under way, which
    /// a pick-up is not), the base's (the hinge only), a proximity or a light sensor's. Each message
    /// made goes to `emit`: the hinge's angle with every display sample while it is watched, an
    /// event only when its state changed.
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
            if feedsGestures {
                gestures.update(specificForce: sample.vector, timestamp: t, isWalking: isWalking) { made in
                    gesture = GestureMessage(timestamp: t, gesture: made)
                    emit(.gesture(gesture!))
                }
            }
        case .proximity:
            let message = ProximityMessage(timestamp: t, near: sample.isNear, value: sample.vector.x)
            let changed = proximity?.near != message.near
            proximity = message
            if changed { emit(.proximity(message)) }
        case .light:
            let unit: LightMessage.Unit = vendorUnitLight.contains(sample.device) ? .vendor : .lux
            let message = LightMessage(timestamp: t, illuminance: sample.vector.x, unit: unit)
            let changed = light.map { $0.illuminance != message.illuminance || $0.unit != message.unit } ?? true
            light = message
            if changed { emit(.light(message)) }
        case .humanPresence, .significantMotion, .onBody:
            break  // issue 65: the presence and significant-motion helpers fill these in.
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
        default: nil
        }
    }
}
