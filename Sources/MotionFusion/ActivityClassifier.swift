#if canImport(Glibc)
import Glibc
#endif
import MotionCore

/// Classifies the motion activity from the accelerometer and the step detector's view of the gait.
///
/// - **stationary**: the specific force stays within `stillnessLimit` (RMS, m/s²) of its mean: the
///   device lies still or is held still. The limit sits above accelerometer noise (BROAD's IMU reads
///   0.1 m/s² at rest over its full bandwidth) and far below any carried motion (walking: 1–3 m/s²).
///   High confidence under a third of the limit.
/// - **walking** / **running**: the step detector is in a walk; running at `runningCadence` steps/s and
///   up (running cadences are 2.5–3.3 steps/s, walking 1–2.2). High confidence once it has lasted
///   `confidentDuration`, medium before.
/// - **unknown**, low confidence: anything else (a device moved by hand, a vehicle, a bicycle).
///   Cycling and automotive are never reported: no real recording of them was at hand to build and
///   check a detector against (docs/activity.md).
///
/// Until an activity has held `minimumDuration`, it is `unknown` with low confidence, from the
/// first sample (a poll is answered at once, and truthfully). A new activity is reported once it has
/// held `minimumDuration`, its start time when it began; within one activity the confidence only
/// rises (a stationary device whose noise wavers about the high-confidence bound would otherwise be
/// reported over and over), and a spell of another activity too short to report does not end it. A hole in the samples longer than `maximumGap`, or a timestamp that goes
/// back, starts over as at the first sample: what the person did before the hole says nothing of now.
///
/// Parameters: `stillnessTau` 1 s, `stillnessLimit` 0.3 m/s², `runningCadence` 2.3 steps/s,
/// `minimumDuration` 2 s, `confidentDuration` 10 s, `maximumGap` 1 s.
public struct ActivityClassifier: Sendable {
    /// The classifier's parameters (units in the type's documentation).
    public struct Parameters: Sendable, Equatable {
        /// s.
        public var stillnessTau = 1.0
        /// m/s², RMS.
        public var stillnessLimit = 0.3
        /// Steps/s.
        public var runningCadence = 2.3
        /// s.
        public var minimumDuration = 2.0
        /// s.
        public var confidentDuration = 10.0
        /// s.
        public var maximumGap = 1.0

        /// The defaults.
        public init() {}
    }

    /// One classification: the activity, how sure, and since when (ns, the samples' clock).
    public struct Activity: Sendable, Equatable {
        /// What the person is doing.
        public var kind: MotionActivityKind
        /// How sure.
        public var confidence: MotionActivityConfidence
        /// When it began, ns.
        public var start: Int64
    }

    /// The parameters in use.
    public let parameters: Parameters
    /// The activity reported now; `nil` before the first sample.
    public private(set) var current: Activity?

    private var mean = Vector3.zero
    private var deviationPower = 0.0
    private var lastTimestamp: Int64?
    private var candidate: MotionActivityKind = .unknown
    private var candidateStart: Int64 = 0

    /// A classifier with `parameters`.
    public init(parameters: Parameters = Parameters()) {
        self.parameters = parameters
    }

    /// The RMS deviation of the specific force from its mean, m/s².
    public var stillness: Double { deviationPower.squareRoot() }

    /// Feeds one accelerometer sample (m/s², ns) after `detector` has had it. Returns the new
    /// activity when the reported one changes (kind, start or a rise in confidence), else `nil`.
    public mutating func update(specificForce: Vector3, timestamp: Int64, detector: StepDetector) -> Activity? {
        let p = parameters
        // Saturating (`TimestampArithmetic`): a step back or a jump of any size is a gap to start over after.
        let dt = lastTimestamp.map { timestamp.seconds(since: $0) } ?? -1
        guard dt >= 0, dt <= p.maximumGap else {
            mean = specificForce
            deviationPower = 0
            lastTimestamp = timestamp
            candidate = .unknown
            candidateStart = timestamp
            current = Activity(kind: .unknown, confidence: .low, start: timestamp)
            return current
        }
        lastTimestamp = timestamp
        let alpha = 1 - exp(-dt / p.stillnessTau)
        mean = mean + (specificForce - mean) * alpha
        deviationPower += alpha * ((specificForce - mean).squaredLength - deviationPower)

        let kind: MotionActivityKind
        if detector.isWalking {
            kind = detector.gait.cadence >= p.runningCadence ? .running : .walking
        } else if stillness < p.stillnessLimit {
            kind = .stationary
        } else {
            kind = .unknown
        }
        if kind != candidate {
            candidate = kind
            candidateStart = timestamp
        }
        let held = timestamp.seconds(since: candidateStart)
        guard held >= p.minimumDuration else { return nil }
        let confidence: MotionActivityConfidence
        switch kind {
        case .walking, .running: confidence = held >= p.confidentDuration ? .high : .medium
        case .stationary: confidence = stillness < p.stillnessLimit / 3 ? .high : .medium
        default: confidence = .low
        }
        // The same activity (a spell of another too short to report between): only a rise in
        // confidence is news, and it keeps its start.
        if let current, current.kind == kind {
            guard confidence > current.confidence else { return nil }
            self.current?.confidence = confidence
            return self.current
        }
        current = Activity(kind: kind, confidence: confidence, start: candidateStart)
        return current
    }
}
