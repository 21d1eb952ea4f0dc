#if canImport(Glibc)
import Glibc
#endif
import MotionCore

/// Detects steps from the accelerometer alone, in any orientation (a phone in the hand, a pocket, a
/// bag), at any rate from 25 Hz up.
///
/// The signal is the specific force's magnitude (orientation-free: a heel strike jolts the body
/// along gravity, whatever way the device faces), low-passed at `cutoffFrequency` and resampled onto
/// a fixed `internalRate` grid, so that a 25 Hz accelerometer and a 400 Hz one are judged alike. Less
/// its one-second mean, each upward crossing of a threshold (a fraction of the recent amplitude,
/// with a floor) after a crossing of its negative is a step candidate.
///
/// Candidates count only while the last `window` looks like gait, and only once
/// `confirmationSteps` of them have come in a row, none more than `maximumEntryInterval` apart, and
/// no look at the window since the first of the last `sustainedSteps` of them found it not gait (a
/// hand's motion looks like gait for a moment, a walk goes on looking so), unless a walk ended less
/// than `resumeWindow` ago (a stumble or a swing of the arm closed the gate: the same walk goes on);
/// then all the candidates of that run count (up to three times `confirmationSteps`, the run's first
/// steps included), as Android's step counter does. This keeps a device turned, shaken, tapped or
/// moved to and fro by hand from counting. Gait means:
/// - the orientation is steady: the window's mean specific force is within `gravityBand` of 1 g (a
///   device turned over averages less);
/// - the signal repeats at a stride or a step: its normalised autocorrelation reaches
///   `minimumPeriodicity` at a lag within `periodRange`;
/// - the motion is mostly vertical: at least `minimumVerticalShare` of the dynamic acceleration's
///   variance is along gravity (the body's centre of mass rises and falls with each step; a hand
///   moving a device sideways does not);
/// - the motion shows in the magnitude: at least `minimumMagnitudeShare` of the dynamic
///   acceleration's variance is in the magnitude's (turning the device moves gravity within its
///   frame and leaves the magnitude as it was; a heel strike's jolt is along gravity and shows whole);
/// - the amplitude fits the cadence: above `walkingAmplitudeLimit` (vertical trunk acceleration in
///   walking stays near 0.2–0.4 g) only at a running cadence (`runningCadence` and up);
/// - the bounce fits the cadence: a vertical oscillation of amplitude d at f steps/s has an RMS
///   acceleration of (2πf)² d / √2, so the magnitude's RMS at the cadence implies a d, which must be
///   at most `maximumBounce`. The body's centre of mass rises and falls 4–5 cm peak to peak in a walk
///   (Saunders, Inman & Eberhart 1953; Gard & Childress 1997), some 2.5 cm of amplitude; the phones
///   of the Oxford walks imply 0.8–2.5 cm (median per walk), 4.2 cm at most. A hand moving a device
///   10 cm up and down once a second is as strong, at a walking cadence, but not a step.
///
/// While walking, a gap of 1.6–2.4 step periods counts the missed step in its middle (one leg's
/// strike too weak to cross, as with a phone swinging in the hand); a longer one ends the walk.
///
/// A hole in the samples longer than `maximumGap` (the sensor stopped while nobody watched, a device
/// replaced) or a timestamp that goes back starts the detector over from that sample, the count kept:
/// no walk continues across a hole, and the grid is never stepped through hours of nothing.
///
/// Parameters (units and defaults):
/// - `cutoffFrequency` 3 Hz: walking cadences are 1–2.5 steps/s, running up to 3.5;
/// - `internalRate` 25 Hz: the grid the detector runs on;
/// - `meanTau` 1 s: the time constant of the mean taken off;
/// - `amplitudeTau` 2 s: the time constant of the amplitude the threshold follows;
/// - `thresholdFraction` 0.4 and `minimumThreshold` 0.25 m/s²: the threshold;
/// - `minimumInterval` 0.25 s: the least time between steps (4 steps/s, a sprint);
/// - `maximumEntryInterval` 1 s: the most between the candidates that start a walk (60 steps/min, the
///   slowest walking);
/// - `confirmationSteps` 6; `sustainedSteps` 3 (1.5 s at 2 steps/s); `resumeWindow` 10 s;
/// - `window` 4 s, `periodRange` 0.5–2 s, `minimumPeriodicity` 0.6;
/// - `gravityBand` 0.9–1.1 g; `minimumVerticalShare` 0.25; `minimumMagnitudeShare` 0.15;
/// - `walkingAmplitudeLimit` 4.5 m/s² RMS; `runningCadence` 2.3 steps/s; `maximumBounce` 0.05 m
///   (twice the centre of mass's amplitude in walking; running's is 3–5 cm);
/// - `maximumGap` 1 s: the longest hole between samples that a walk goes on across.
///
/// The per-sample path allocates nothing: the window and the histories are fixed buffers made once.
public struct StepDetector: Sendable {
    /// The detector's parameters (units in the type's documentation).
    public struct Parameters: Sendable, Equatable {
        /// Hz.
        public var cutoffFrequency = 3.0
        /// Hz.
        public var internalRate = 25.0
        /// s.
        public var meanTau = 1.0
        /// s.
        public var amplitudeTau = 2.0
        /// Of the recent mean absolute amplitude.
        public var thresholdFraction = 0.4
        /// m/s².
        public var minimumThreshold = 0.25
        /// s.
        public var minimumInterval = 0.25
        /// s.
        public var maximumEntryInterval = 1.0
        /// Candidates in a row that start a walk.
        public var confirmationSteps = 6
        /// Of those, the last ones the gait gate must have held open throughout.
        public var sustainedSteps = 3
        /// s: within this long of a walk's end, a walk resumes without `sustainedSteps`.
        public var resumeWindow = 10.0
        /// s.
        public var window = 4.0
        /// Autocorrelation lags searched, s.
        public var periodRange = 0.5...2.0
        /// Normalised autocorrelation, 0–1.
        public var minimumPeriodicity = 0.6
        /// Mean specific force over the window, in g.
        public var gravityBand = 0.9...1.1
        /// Share of the dynamic acceleration's variance along gravity, 0–1.
        public var minimumVerticalShare = 0.25
        /// Share of the dynamic acceleration's variance that shows in the specific force's magnitude, 0–1.
        public var minimumMagnitudeShare = 0.15
        /// m/s², RMS of the filtered magnitude.
        public var walkingAmplitudeLimit = 4.5
        /// m: the largest vertical excursion (amplitude) the bounce may imply at the cadence.
        public var maximumBounce = 0.05
        /// Steps/s.
        public var runningCadence = 2.3
        /// s.
        public var maximumGap = 1.0

        /// The defaults.
        public init() {}
    }

    /// What the last look at the window found (every half second), for the activity classifier.
    public struct Gait: Sendable, Equatable {
        /// Whether the window looked like walking or running.
        public var isGait = false
        /// Steps per second, from the recent candidates; 0 with fewer than three.
        public var cadence = 0.0
    }

    /// The parameters in use.
    public let parameters: Parameters
    /// Whether a walk (or run) is under way: candidates count as they come.
    public private(set) var isWalking = false
    /// What the window looked like at its last evaluation.
    public private(set) var gait = Gait()
    /// Steps counted so far.
    public private(set) var steps = 0

    private let tickPeriod: Double
    private let lowPassTau: Double
    // The per-tick gains of the mean and the amplitude (first-order, at the grid's fixed period).
    private let meanGain: Double
    private let amplitudeGain: Double
    private var origin: Int64?
    private var lastTime = 0.0
    private var nextTick = 0.0
    private var tickIndex: Int64 = 0
    private var smooth1 = 0.0, smooth2 = 0.0, mean = 0.0, amplitude = 1.0
    private var smoothVector = Vector3.zero
    private var armed = false
    private var ticksSinceEvaluation = 0
    private var gateOpen = false
    /// When an evaluation last found the window not gait, s; −∞ if none has since the start.
    private var lastClosed = -Double.infinity
    /// When the last walk ended, s; −∞ if none has since the start.
    private var lastWalkEnd = -Double.infinity
    private var lastCandidate: Double?

    // The window, oldest first from `windowHead`.
    private var signal: [Double]
    private var vectors: [Vector3]
    private var windowHead = 0
    private var windowFilled = 0
    // Candidates not yet counted, and the recent ones (for the cadence).
    private var pending: Ring
    private var recent: Ring
    // The last counted steps (for the step period).
    private var counted: Ring
    private var scratch: [Double]

    /// A detector with `parameters`.
    public init(parameters: Parameters = Parameters()) {
        self.parameters = parameters
        tickPeriod = 1 / parameters.internalRate
        lowPassTau = 1 / (2 * .pi * parameters.cutoffFrequency)
        meanGain = 1 - exp(-tickPeriod / parameters.meanTau)
        amplitudeGain = 1 - exp(-tickPeriod / parameters.amplitudeTau)
        let count = Int(parameters.window * parameters.internalRate)
        signal = Array(repeating: 0, count: count)
        vectors = Array(repeating: .zero, count: count)
        // Room for the candidates of a walk's first seconds before the gate opens, and six after.
        pending = Ring(capacity: 3 * parameters.confirmationSteps)
        recent = Ring(capacity: 10)
        counted = Ring(capacity: 9)
        scratch = Array(repeating: 0, count: 10)
    }

    /// The step period, s: the median of the last eight intervals between counted steps; `nil`
    /// before three steps.
    public private(set) var stepPeriod: Double?

    /// Feeds one accelerometer sample: the specific force (m/s², any device frame) at `timestamp`
    /// (ns, increasing). `step` is called with the instant (ns) of each step counted, in order; the
    /// first steps of a walk are counted together once the walk is confirmed, so their instants are
    /// up to a few seconds old.
    public mutating func update(specificForce: Vector3, timestamp: Int64, step: (Int64) -> Void) {
        let magnitude = specificForce.length
        guard let origin else { return restart(at: timestamp, magnitude: magnitude, specificForce: specificForce) }
        // Saturating (`TimestampArithmetic`): a step back or a jump of any size is a gap to restart at.
        let time = timestamp.seconds(since: origin)
        let dt = time - lastTime
        if dt == 0 { return }
        guard dt > 0, dt <= parameters.maximumGap else { return restart(at: timestamp, magnitude: magnitude, specificForce: specificForce) }
        lastTime = time
        let alpha = 1 - exp(-dt / lowPassTau)
        smooth1 += alpha * (magnitude - smooth1)
        smooth2 += alpha * (smooth1 - smooth2)
        smoothVector = smoothVector + (specificForce - smoothVector) * alpha
        while nextTick <= time {
            tick(at: nextTick, step: step)
            tickIndex += 1
            nextTick = Double(tickIndex) * tickPeriod
        }
    }

    /// Starts over at a sample: the filters from its value, the window, candidates and walk cleared;
    /// the count kept. No allocation: the buffers are refilled in place.
    private mutating func restart(at timestamp: Int64, magnitude: Double, specificForce: Vector3) {
        origin = timestamp
        lastTime = 0
        nextTick = 0
        tickIndex = 0
        smooth1 = magnitude
        smooth2 = magnitude
        mean = magnitude
        amplitude = 1
        smoothVector = specificForce
        armed = false
        ticksSinceEvaluation = 0
        gateOpen = false
        lastClosed = -.infinity
        lastWalkEnd = -.infinity
        gait = Gait()
        isWalking = false
        lastCandidate = nil
        windowHead = 0
        windowFilled = 0
        pending.removeAll()
        recent.removeAll()
        counted.removeAll()
        stepPeriod = nil
    }

    private mutating func tick(at time: Double, step: (Int64) -> Void) {
        let p = parameters
        mean += meanGain * (smooth2 - mean)
        let x = smooth2 - mean
        signal[windowHead] = x
        vectors[windowHead] = smoothVector
        windowHead = (windowHead + 1) % signal.count
        windowFilled = min(windowFilled + 1, signal.count)
        ticksSinceEvaluation += 1
        if Double(ticksSinceEvaluation) >= p.internalRate / 2 && windowFilled == signal.count {
            ticksSinceEvaluation = 0
            gait = evaluate()
            gateOpen = gait.isGait
            if !gateOpen { lastClosed = time }
        }
        amplitude += amplitudeGain * (abs(x) - amplitude)
        let threshold = max(p.thresholdFraction * amplitude, p.minimumThreshold)
        if x < -threshold {
            armed = true
        } else if x > threshold && armed {
            armed = false
            candidate(at: time, step: step)
        }
        if isWalking && !gateOpen {
            isWalking = false
            lastWalkEnd = time
            pending.removeAll()
        }
    }

    private mutating func candidate(at time: Double, step: (Int64) -> Void) {
        let p = parameters
        if let lastCandidate, time - lastCandidate < p.minimumInterval { return }
        lastCandidate = time
        recent.append(time)
        if isWalking, let last = counted.last {
            let interval = time - last
            let period = stepPeriod ?? interval
            if interval > 2.4 * period {
                isWalking = false
                lastWalkEnd = time
                pending.removeAll()
                pending.append(time)
                return
            }
            if interval > 1.6 * period { count(last + interval / 2, step: step) }
            count(time, step: step)
            return
        }
        if let last = pending.last, time - last > p.maximumEntryInterval { pending.removeAll() }
        pending.append(time)
        // The gate has held over the last few candidates: gait throughout, not a moment's look of it;
        // or a walk that stopped a moment ago (a stumble, a swing of the arm closed the gate) goes on.
        if pending.count >= p.confirmationSteps && gateOpen && (sustained || time - lastWalkEnd <= p.resumeWindow) {
            isWalking = true
            for index in 0..<pending.count { count(pending[index], step: step) }
            pending.removeAll()
        }
    }

    /// Whether no evaluation since the first of the last `sustainedSteps` candidates found the window
    /// not gait.
    private var sustained: Bool {
        let span = min(parameters.sustainedSteps, pending.count)
        return span <= 0 || lastClosed < pending[pending.count - span]
    }

    private mutating func count(_ time: Double, step: (Int64) -> Void) {
        counted.append(time)
        if counted.count > 2 { stepPeriod = Self.medianInterval(counted, scratch: &scratch) }
        steps += 1
        step((origin ?? 0).saturatingAdvanced(by: Int64((time * 1e9).rounded())))
    }

    /// Looks at the window: is it gait (the conditions in the type's documentation)?
    private mutating func evaluate() -> Gait {
        let p = parameters
        let n = signal.count
        var gait = Gait()
        var sum = Vector3.zero
        for v in vectors { sum = sum + v }
        let gravity = sum * (1 / Double(n))
        let gravityRatio = gravity.length / Units.standardGravity
        var squares = 0.0
        for x in signal { squares += x * x }
        let rootMeanSquare = (squares / Double(n)).squareRoot()
        // The cadence from the candidates within the window.
        var firstRecent = recent.count
        for index in 0..<recent.count where recent[index] > lastTime - p.window {
            firstRecent = index
            break
        }
        if recent.count - firstRecent >= 3 {
            gait.cadence = 1 / Self.medianInterval(recent, from: firstRecent, scratch: &scratch)
        }
        guard p.gravityBand.contains(gravityRatio), gait.cadence > 0 else { return gait }
        if rootMeanSquare > p.walkingAmplitudeLimit && gait.cadence < p.runningCadence { return gait }
        // The bounce fits the cadence: a vertical oscillation of amplitude d at f steps/s accelerates
        // by (2πf)²·d at its peaks, √2 times its RMS.
        let omega = 2 * Double.pi * gait.cadence
        if 2.squareRoot() * rootMeanSquare > omega * omega * p.maximumBounce { return gait }
        // The vertical share of the dynamic acceleration's variance.
        let up = gravity * (1 / gravity.length)
        var total = 0.0, vertical = 0.0
        for v in vectors {
            let d = v - gravity
            total += d.squaredLength
            let along = d.dot(up)
            vertical += along * along
        }
        guard total > 0, vertical / total >= p.minimumVerticalShare else { return gait }
        // Rotation-free: turning the device or moving it sideways changes the specific force's
        // direction, hardly its magnitude; a heel strike changes its magnitude.
        guard squares / total >= p.minimumMagnitudeShare else { return gait }
        // The best normalised autocorrelation over the lags, the window read oldest first.
        let shortest = Int(p.periodRange.lowerBound * p.internalRate)
        let longest = min(Int(p.periodRange.upperBound * p.internalRate), n - 2)
        var best = -1.0
        for lag in shortest...longest {
            var product = 0.0, early = 0.0, late = 0.0
            for i in 0..<(n - lag) {
                let a = signal[(windowHead + i) % n], b = signal[(windowHead + i + lag) % n]
                product += a * b
                early += a * a
                late += b * b
            }
            let norm = (early * late).squareRoot()
            if norm > 0 { best = max(best, product / norm) }
        }
        gait.isGait = best >= p.minimumPeriodicity
        return gait
    }

    /// The median of the intervals between the ring's times from `first` on.
    private static func medianInterval(_ ring: Ring, from first: Int = 0, scratch: inout [Double]) -> Double {
        var count = 0
        for index in (first + 1)..<ring.count {
            // Insertion sort into the scratch buffer: at most nine values.
            let value = ring[index] - ring[index - 1]
            var position = count
            while position > 0 && scratch[position - 1] > value {
                scratch[position] = scratch[position - 1]
                position -= 1
            }
            scratch[position] = value
            count += 1
        }
        return count % 2 == 1 ? scratch[count / 2] : (scratch[count / 2 - 1] + scratch[count / 2]) / 2
    }

    /// A fixed-capacity ring of times, oldest first; appending past the capacity drops the oldest.
    struct Ring: Sendable {
        private var storage: [Double]
        private var start = 0
        private(set) var count = 0

        init(capacity: Int) { storage = Array(repeating: 0, count: max(capacity, 1)) }

        subscript(index: Int) -> Double { storage[(start + index) % storage.count] }
        var last: Double? { count == 0 ? nil : self[count - 1] }

        mutating func append(_ value: Double) {
            if count == storage.count {
                storage[start] = value
                start = (start + 1) % storage.count
            } else {
                storage[(start + count) % storage.count] = value
                count += 1
            }
        }

        mutating func removeAll() {
            start = 0
            count = 0
        }
    }
}
