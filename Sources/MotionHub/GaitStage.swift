import MotionCore
import MotionFusion
import MotionSystem
import MotionWire

/// The pipeline's gait stage: steps, activity and floors on foot, from the accelerometer's specific
/// force and the pressure sensor's altitudes, and the week's history they fill. It keeps its latest
/// `PEDOMETER`, `ACTIVITY` and `ALTITUDE` (for polls and new watchers) and returns each message it
/// makes, for the pipeline to send. The step detector and the activity classifier are fed only while
/// `detecting`. No I/O: its tests drive it with samples.
struct GaitStage {
    /// The streams whose values need the step detector: its own, gestures (a pick-up is not a
    /// step: the recognizer asks whether a walk is under way), and `significant_motion` where no chip
    /// gives it (a walk confirmed).
    static let streamsDetecting: Set<StreamKind> = [.pedometer, .activity, .gesture, .significantMotion]
    private var stepDetector = StepDetector()
    private var activityClassifier = ActivityClassifier()
    private var altimeter = AltitudeEstimator()
    /// Floors on foot, from the first altitude (a pressure sensor running with the pedometer).
    private var floors: FloorCounter?
    /// The steps and activities of the last week, and the count since the first start.
    private(set) var history: GaitHistory
    /// Changes to `history`: the hub saves it when this moved.
    private(set) var historyRevision = 0
    /// Metres per step; a new one applies at once to the distance and pace (polls and new watchers
    /// get them), and to the distances sent from then on, the total's included.
    var stepLength = LiveSettings.defaults.stepLength {
        didSet {
            pedometer.distance = Double(history.totalSteps) * stepLength
            pedometer.pace = pedometer.cadence.map { 1 / ($0 * stepLength) }
        }
    }
    /// The step count now (0 steps, and no cadence, before the first).
    private(set) var pedometer: PedometerMessage
    /// The activity reported last; `nil` until one has held 2 s since the sensors started.
    private(set) var activity: ActivityMessage?
    /// The last altitude, while the pressure sensor runs.
    private(set) var altitude: AltitudeMessage?
    /// The sea-level pressure the altitude is computed for, kPa.
    var seaLevelPressure: Double {
        get { altimeter.parameters.seaLevelPressure }
        set { altimeter.parameters.seaLevelPressure = newValue }
    }
    /// The wall-clock time (ns of Unix time) of a monotonic instant (ns), for the history.
    private let wallClock: (Int64) -> Int64
    /// Whether the accelerometer's samples feed the step detector and the activity classifier
    /// (`follow(detecting:)`): none until the pipeline says so.
    private(set) var detecting = false

    /// A stage that goes on from `history`; `wallClock` turns monotonic instants into Unix time (the
    /// two clocks' offset now, unless a test gives its own).
    init(history: GaitHistory, wallClock: @escaping (Int64) -> Int64 = GaitStage.wallClockNow) {
        self.history = history
        self.wallClock = wallClock
        pedometer = PedometerMessage(timestamp: 0, steps: history.totalSteps, distance: Double(history.totalSteps) * stepLength, cadence: nil, pace: nil)
    }

    /// Whether a walk is under way (the gestures and the floors ask).
    var isWalking: Bool { stepDetector.isWalking }

    /// Feeds the step detector and the activity classifier from now on, or stops: while stopped the
    /// count stays, no walk is under way and the activity is unknown, and they start afresh when fed
    /// again (a walk's rhythm and an activity's 2 s from before the stop say nothing of now).
    mutating func follow(detecting: Bool) {
        guard detecting != self.detecting else { return }
        self.detecting = detecting
        guard !detecting else { return }
        stepDetector = StepDetector()
        activityClassifier = ActivityClassifier()
        activity = nil
    }

    /// The sensors stopped: the count stays; the activity starts over with them (unknown until one
    /// has held 2 s), not as it was when they stopped.
    mutating func sensorsStopped() {
        activity = nil
        altitude = nil
        activityClassifier = ActivityClassifier()
    }

    /// Takes one specific force (m/s²) at `t` (ns): returns a `PEDOMETER` if it counted steps and an
    /// `ACTIVITY` if the activity changed; both go into the history. Nothing while not `detecting`.
    mutating func update(specificForce: Vector3, at t: Int64) -> (pedometer: PedometerMessage?, activity: ActivityMessage?) {
        var changed: (pedometer: PedometerMessage?, activity: ActivityMessage?) = (nil, nil)
        guard detecting else { return changed }
        let before = stepDetector.steps
        var last: Int64 = 0
        stepDetector.update(specificForce: specificForce, timestamp: t) { last = $0 }
        if stepDetector.steps != before {
            history.add(steps: stepDetector.steps - before, at: wallClock(last))
            historyRevision += 1
            let cadence = stepDetector.stepPeriod.map { 1 / $0 }
            pedometer = PedometerMessage(
                timestamp: last, steps: history.totalSteps, distance: Double(history.totalSteps) * stepLength, cadence: cadence,
                pace: cadence.map { 1 / ($0 * stepLength) })
            pedometer.floorsAscended = floors?.ascended
            pedometer.floorsDescended = floors?.descended
            changed.pedometer = pedometer
        }
        if let change = activityClassifier.update(specificForce: specificForce, timestamp: t, detector: stepDetector) {
            history.add(HistoryReply.Activity(activity: change.kind, confidence: change.confidence, start: Double(wallClock(change.start)) * 1e-9))
            historyRevision += 1
            activity = ActivityMessage(timestamp: t, activity: change.kind, confidence: change.confidence, start: change.start)
            changed.activity = activity
        }
        return changed
    }

    /// Takes one reading of the chip's own step counter or activity classes: returns a `PEDOMETER` if
    /// the count moved and an `ACTIVITY` if the activity changed; both go into the history.
    mutating func update(chip sample: SensorSample) -> (pedometer: PedometerMessage?, activity: ActivityMessage?) {
        (nil, nil)  // issue 65: the chip pedometer's helper fills this in.
    }

    /// Takes one pressure reading (kPa) at `t` (ns): returns its `ALTITUDE` (none for a reading the
    /// altimeter refuses) and a `PEDOMETER` if a floor was climbed or descended on foot.
    mutating func update(pressure: Double, at t: Int64) -> (altitude: AltitudeMessage?, pedometer: PedometerMessage?) {
        guard let reading = altimeter.update(pressure: pressure, timestamp: t) else { return (nil, nil) }
        altitude = AltitudeMessage(timestamp: t, pressure: reading.pressure, altitude: reading.altitude, precision: reading.precision)
        if floors == nil { floors = FloorCounter() }
        guard floors!.update(altitude: reading.altitude, timestamp: t, isWalking: stepDetector.isWalking) else { return (altitude, nil) }
        pedometer.floorsAscended = floors!.ascended
        pedometer.floorsDescended = floors!.descended
        return (altitude, pedometer)
    }

    /// The latest value of one of this stage's streams, for a poll or a new watcher.
    func latest(_ stream: StreamKind) -> AnyServerMessage? {
        switch stream {
        case .pedometer: .pedometer(pedometer)
        case .activity: activity.map { .activity($0) }
        case .altitude: altitude.map { .altitude($0) }
        default: nil
        }
    }

    /// The wall-clock time (ns of Unix time) of monotonic instant `t`: the two clocks' offset now.
    static func wallClockNow(_ t: Int64) -> Int64 {
        // Saturated: `t` is a device's timestamp, any Int64, and a wrapped sum would date steps in 1677.
        t.saturatingAdvanced(by: Syscall.realtimeNanoseconds().nanoseconds(since: Syscall.monotonicNanoseconds()))
    }
}
