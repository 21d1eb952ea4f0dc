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
    /// When the chip's counter was last read (ns, monotonic), in this run.
    private var lastChipRead: Int64?
    /// Told of a chip count that rose more than anyone walks in the time (the count, the seconds):
    /// not added (the hub logs it).
    var implausibleChipCount: (Int64, Double) -> Void = { _, _ in }
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

    /// Follows where the steps and the activity come from: the chip's own counter and classes where
    /// the plan reads them, else the step detector and the classifier. The detector may run all the
    /// same (a gesture asks whether a walk is under way), but what the chip gives is not counted twice.
    mutating func follow(chipSteps: Bool, chipActivity: Bool) {
        if chipSteps != stepsFromChip { lastChipRead = nil }
        if chipActivity != activityFromChip { activity = nil }
        (stepsFromChip, activityFromChip) = (chipSteps, chipActivity)
    }

    /// Whether the chip's counter gives the steps (`follow(chipSteps:chipActivity:)`).
    private(set) var stepsFromChip = false
    /// Whether the chip's classes give the activity.
    private(set) var activityFromChip = false

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
        if stepDetector.steps != before, !stepsFromChip {
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
        if let change = activityClassifier.update(specificForce: specificForce, timestamp: t, detector: stepDetector), !activityFromChip {
            history.add(HistoryReply.Activity(activity: change.kind, confidence: change.confidence, start: Double(wallClock(change.start)) * 1e-9))
            historyRevision += 1
            activity = ActivityMessage(timestamp: t, activity: change.kind, confidence: change.confidence, start: change.start)
            changed.activity = activity
        }
        return changed
    }

    /// Takes one reading of the chip's own step counter (`ChipStepCount` reconciles it with the
    /// history) or activity classes: returns a `PEDOMETER` if steps were added and an `ACTIVITY` if
    /// the activity changed; both go into the history. A chip is read at events and at the client's
    /// interval, not per step: the steps between two reads are dated at the second, and the cadence
    /// is theirs over the time between the reads.
    mutating func update(chip sample: SensorSample) -> (pedometer: PedometerMessage?, activity: ActivityMessage?) {
        let t = sample.timestamp
        switch sample.kind {
        case .stepCounter:
            guard let count = Int64(exactly: sample.vector.x.rounded()), count >= 0, let modulus = Int64(exactly: sample.vector.y.rounded()) else {
                return (nil, nil)
            }
            let previous = (time: lastChipRead, counter: history.chipCounter)
            let (counter, reading) = ChipStepCount.reconcile(
                history.chipCounter, device: sample.device.sysname, count: count, modulus: modulus, at: wallClock(t),
                elapsed: previous.time.map { t.seconds(since: $0) })
            lastChipRead = t
            if counter != history.chipCounter {
                history.chipCounter = counter
                historyRevision += 1
            }
            if case .implausible(let count, let seconds) = reading { implausibleChipCount(count, seconds) }
            let steps = reading.steps
            guard steps > 0 else {
                // A read that found no new step ends the walk's cadence.
                if pedometer.cadence != nil, previous.counter != nil {
                    pedometer.cadence = nil
                    pedometer.pace = nil
                }
                return (nil, nil)
            }
            history.add(steps: steps, at: wallClock(t))
            // Steps over the time since the last read, if it was a read of this walk (no more than
            // `chipCadenceSpan` before): a first read after a pause dates a walk's steps, not its pace.
            let cadence = previous.time.flatMap { last -> Double? in
                let seconds = t.seconds(since: last)
                guard seconds > 0, seconds <= Self.chipCadenceSpan, previous.counter != nil else { return nil }
                return Double(steps) / seconds
            }
            pedometer = PedometerMessage(
                timestamp: t, steps: history.totalSteps, distance: Double(history.totalSteps) * stepLength, cadence: cadence,
                pace: cadence.map { 1 / ($0 * stepLength) })
            pedometer.floorsAscended = floors?.ascended
            pedometer.floorsDescended = floors?.descended
            return (pedometer, nil)
        case .activityRecognizer:
            // The chip reports 100 % for its class and 0 for the others (`bma400_read_raw`,
            // drivers/iio/accel/bma400_core.c:950–966, Linux 6.12); a class at half or more is taken.
            let classes: [(MotionActivityKind, Double)] = [(.stationary, sample.vector.x), (.walking, sample.vector.y), (.running, sample.vector.z)]
            guard let (kind, percent) = classes.max(by: { $0.1 < $1.1 }), percent >= 50, kind != activity?.activity else { return (nil, nil) }
            let confidence: MotionActivityConfidence = percent >= 90 ? .high : .medium
            history.add(HistoryReply.Activity(activity: kind, confidence: confidence, start: Double(wallClock(t)) * 1e-9))
            historyRevision += 1
            activity = ActivityMessage(timestamp: t, activity: kind, confidence: confidence, start: t)
            return (nil, activity)
        default:
            return (nil, nil)
        }
    }

    /// The longest time between two reads of the chip's counter over which their steps give a cadence, s.
    static let chipCadenceSpan = 10.0

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
