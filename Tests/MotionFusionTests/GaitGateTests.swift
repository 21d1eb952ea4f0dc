import Foundation
import MotionCore
import Testing

@testable import MotionFusion

/// The gait gates added against hand motion (issue 64), each on a synthetic signal whose answer
/// follows from the physics of gait, and significant motion's minimum walk.
@Suite struct GaitGateTests {
    /// Specific force (m/s²) of a device held still, face up, that bounces vertically with
    /// displacement `amplitude` (m) at `frequency` (Hz): z(t) = d sin(2πft), so the acceleration is
    /// −(2πf)² d sin(2πft); sampled at 50 Hz with a phone accelerometer's 0.05 m/s² of noise.
    static func bounce(amplitude: Double, frequency: Double) -> (Double) -> Vector3 {
        var noise = SeededNoise(seed: 11)
        return { t in
            let omega = 2 * Double.pi * frequency
            let a = -omega * omega * amplitude * sin(omega * t)
            return Vector3(x: 0, y: 0, z: 9.81 + a) + noise.vector(0.05)
        }
    }

    /// The body's centre of mass rises and falls some 4–5 cm peak to peak in each step of a walk
    /// (Saunders, Inman & Eberhart 1953, "The major determinants in normal and pathological gait";
    /// Gard & Childress 1997 measure 4–5 cm), an amplitude of about 2.5 cm: at 2 steps/s that is
    /// (4π)² × 0.025 = 3.9 m/s², which counts as walking (30 s at 2 steps/s is 60 steps, less the
    /// few before the gate has seen 4 s of gait). A hand lifting a device 10 cm up and down once a
    /// second accelerates it by (2π)² × 0.10 = 3.9 m/s² as well, within the walking amplitude
    /// (`walkingAmplitudeLimit`, 4.5 m/s² RMS), at a walking cadence (1 step/s), vertically and
    /// regularly: only the bounce the cadence implies, 10 cm against the 5 cm limit, tells it from a
    /// walk.
    @Test func aBounceTooTallForItsCadenceIsNoWalk() {
        let walkLike = Self.bounce(amplitude: 0.025, frequency: 2)
        #expect((50...60).contains(StepDetectorTests.count(walkLike)), "\(StepDetectorTests.count(walkLike))")
        let lifted = Self.bounce(amplitude: 0.10, frequency: 1)
        #expect(StepDetectorTests.count(lifted) == 0)
        #expect(StepDetectorTests.count(lifted, parameters: StepDetectorTests.gateOpen(but: \.maximumBounce)) == 0)
        #expect(StepDetectorTests.count(lifted, parameters: StepDetectorTests.gateOpen(but: nil)) > 20)
    }

    /// A device turned to and fro by the wrist, ±35° about a horizontal axis at 1 Hz, while it is
    /// jolted vertically at 2 Hz (a hand that beats time): turning the device moves gravity within
    /// its frame, g sin θ across it, but leaves the specific force's magnitude as it was (a rotation
    /// keeps lengths), so most of the dynamic acceleration is missing from the magnitude; a heel
    /// strike's jolt is along gravity and shows in it whole.
    @Test func aDeviceTurnedByTheWristIsNoWalk() {
        var noise = SeededNoise(seed: 5)
        let turned = { (t: Double) -> Vector3 in
            let theta = 35 * Double.pi / 180 * sin(2 * .pi * 1 * t)
            let jolt = 2.0 * sin(2 * .pi * 2 * t)
            let up = 9.81 + jolt
            return Vector3(x: 0, y: up * sin(theta), z: up * cos(theta)) + noise.vector(0.05)
        }
        #expect(StepDetectorTests.count(turned) == 0)
        #expect(StepDetectorTests.count(turned, parameters: StepDetectorTests.gateOpen(but: \.minimumMagnitudeShare)) == 0)
        #expect(StepDetectorTests.count(turned, parameters: StepDetectorTests.gateOpen(but: nil)) > 20)
    }

    /// BROAD's IMU moved to and fro by hand (trial 15, fast translation, 44–60 s; nobody walks, by
    /// the optical ground truth): for a moment its window looks like gait (a vertical stretch of the
    /// motion, at a walking cadence) while candidates come a second or less apart. A walk starts only
    /// if the gate has held over its last three candidates (1.5 s at 2 steps/s), so nothing counts;
    /// with a single look at the gate enough, as before, six false steps did.
    @Test func aMomentThatLooksLikeGaitStartsNoWalk() throws {
        let imu = try AccelerometerTable(csv: StepDetectorTests.fixture("broad-15-fast-translation-slice_imu"))
        #expect(StepDetectorTests.count(imu.rows).isEmpty)
        var once = StepDetector.Parameters()
        once.sustainedSteps = 0
        var detector = StepDetector(parameters: once)
        for row in imu.rows { detector.update(specificForce: row.specificForce, timestamp: row.timestamp) { _ in } }
        #expect(detector.steps >= 6, "\(detector.steps)")
    }

    /// A walk (2.5 cm bounces at 2 steps/s, 40 s) during which the device is turned right over once,
    /// in 1 s at 20 s: for the 4 s after, the window's mean specific force is far below 1 g and the
    /// walk ends. The walker never stopped: within `resumeWindow` (10 s) of its end the walk goes on as
    /// soon as the gate opens again, without the gate having to hold over `sustainedSteps` candidates
    /// first (made 18 here, 9 s of steps, so that the difference shows): it resumes by 26 s, and the
    /// steps of the turn are counted; without the window it resumes 9 s later and loses some.
    @Test func aWalkInterruptedByATurnResumes() {
        var noise = SeededNoise(seed: 3)
        func turned(_ t: Double) -> Vector3 {
            let up = 9.81 - pow(4 * Double.pi, 2) * 0.025 * sin(4 * .pi * t)
            let angle = t >= 20 && t < 21 ? 2 * Double.pi * (t - 20) : 0
            return Vector3(x: 0, y: up * sin(angle), z: up * cos(angle)) + noise.vector(0.05)
        }
        func run(resumeWindow: Double) -> (steps: Int, resumed: Double?) {
            var parameters = StepDetector.Parameters()
            parameters.sustainedSteps = 18
            parameters.resumeWindow = resumeWindow
            var detector = StepDetector(parameters: parameters)
            var ended = false
            var resumed: Double?
            for i in 0..<(40 * 50) {
                let t = Double(i) / 50
                let was = detector.isWalking
                detector.update(specificForce: turned(t), timestamp: Int64(t * 1e9)) { _ in }
                if was && !detector.isWalking { ended = true }
                if ended && !was && detector.isWalking && resumed == nil { resumed = t }
            }
            return (detector.steps, resumed)
        }
        let resuming = run(resumeWindow: 10), not = run(resumeWindow: 0)
        #expect(resuming.resumed.map { $0 > 20 && $0 <= 26 } == true, "\(resuming)")
        #expect((not.resumed ?? 40) > 30, "\(not)")
        #expect(resuming.steps > not.steps && resuming.steps >= 70, "\(resuming) against \(not)")
    }

    /// Significant motion fires once a confirmed walk has gone on for `minimumWalk` (5 s), not when it
    /// is confirmed: a hand's few strokes that pass the gate for 4 s raise none, and do not count as
    /// the motion that starts the 60 s of quiet. Fed whether a walk is under way every 20 ms.
    @Test func significantMotionNeedsFiveSecondsOfWalking() {
        var detector = SignificantMotionDetector()
        var fired: [Double] = []
        // Walks (s): 10–14 (4 s: too short), 20–40 (fires at 25), 50–60 (long enough, but within
        // 60 s of the last one's end at 40: none; its own end, 60, starts the quiet), 70–74 (short),
        // 130–140 (fires at 135: 70 s after 60; the short walk at 70–74 did not count as motion).
        let walks: [ClosedRange<Double>] = [10...14, 20...40, 50...60, 70...74, 130...140]
        for i in 0...(150 * 50) {
            let t = Double(i) / 50
            if detector.update(isWalking: walks.contains { $0.contains(t) }, timestamp: Int64((t * 1e9).rounded())) { fired.append(t) }
        }
        #expect(fired == [25, 135], "\(fired)")
        // With no minimum walk, as before issue 64: at the first walk's start only (each later walk
        // begins within 60 s of the one before, the short ones included).
        var parameters = SignificantMotionDetector.Parameters()
        parameters.minimumWalk = 0
        var immediate = SignificantMotionDetector(parameters: parameters)
        var firedImmediately: [Double] = []
        for i in 0...(150 * 50) {
            let t = Double(i) / 50
            if immediate.update(isWalking: walks.contains { $0.contains(t) }, timestamp: Int64((t * 1e9).rounded())) { firedImmediately.append(t) }
        }
        #expect(firedImmediately == [10], "\(firedImmediately)")
    }
}
