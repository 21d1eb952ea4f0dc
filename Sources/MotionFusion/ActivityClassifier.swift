#if canImport(Glibc)
import Glibc
#endif
import MotionCore

/// What the person carrying the device is doing, as CoreMotion's `CMMotionActivity` says it.
public enum MotionActivityKind: String, Sendable, Hashable, Codable, CaseIterable {
    case stationary, walking, running, cycling, automotive, unknown
}

/// How sure a motion activity is, as `CMMotionActivityConfidence`.
public enum MotionActivityConfidence: String, Sendable, Hashable, Codable, CaseIterable {
    case low, medium, high
}

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
/// A new activity is reported once it has held `minimumDuration`; its start time is when it began.
///
/// Parameters: `stillnessTau` 1 s, `stillnessLimit` 0.3 m/s², `runningCadence` 2.3 steps/s,
/// `minimumDuration` 2 s, `confidentDuration` 10 s.
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
    /// The activity reported now; `nil` until one has held `minimumDuration`.
    public private(set) var current: Activity?

    private var mean: Vector3?
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
    /// activity when the reported one changes (kind or confidence), else `nil`.
    public mutating func update(specificForce: Vector3, timestamp: Int64, detector: StepDetector) -> Activity? {
        let p = parameters
        guard let mean, let lastTimestamp else {
            self.mean = specificForce
            self.lastTimestamp = timestamp
            candidateStart = timestamp
            return nil
        }
        let dt = max(Double(timestamp - lastTimestamp) * 1e-9, 1e-4)
        self.lastTimestamp = timestamp
        let alpha = 1 - exp(-dt / p.stillnessTau)
        let updated = mean + (specificForce - mean) * alpha
        self.mean = updated
        deviationPower += alpha * ((specificForce - updated).squaredLength - deviationPower)

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
        let held = Double(timestamp - candidateStart) * 1e-9
        guard held >= p.minimumDuration else { return nil }
        let confidence: MotionActivityConfidence
        switch kind {
        case .walking, .running: confidence = held >= p.confidentDuration ? .high : .medium
        case .stationary: confidence = stillness < p.stillnessLimit / 3 ? .high : .medium
        default: confidence = .low
        }
        let activity = Activity(kind: kind, confidence: confidence, start: candidateStart)
        guard activity.kind != current?.kind || activity.confidence != current?.confidence else { return nil }
        current = activity
        return activity
    }
}
