import Foundation
import MotionCore
import Testing

@testable import MotionFusion

/// The step detector and the activity classifier against independent references: a real walk with
/// its steps from pressure pads under the heels (the Oxford step counter data set), a real IMU moved
/// by hand and set down (BROAD, its rest phases from optical ground truth), and physics.
@Suite struct StepDetectorTests {
    static func fixture(_ name: String) throws -> String {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "csv", subdirectory: "Fixtures"))
        return try String(contentsOf: url, encoding: .utf8)
    }

    /// 60 s of a walk with the phone in a back pocket, 50 Hz (Fixtures/README.md).
    static func pocketWalk() throws -> (walk: AccelerometerTable, truth: [Double]) {
        let walk = try AccelerometerTable(csv: fixture("steps-backpocket-walk"))
        let truth = try fixture("steps-backpocket-walk_steps").split(whereSeparator: \.isNewline).dropFirst().compactMap { Double($0) }
        return (walk, truth)
    }

    static func count(_ rows: [AccelerometerTable.Row]) -> [Int64] {
        var detector = StepDetector()
        var instants: [Int64] = []
        for row in rows { detector.update(specificForce: row.specificForce, timestamp: row.timestamp) { instants.append($0) } }
        return instants
    }

    /// Linear interpolation onto a `rate` Hz grid, as a slower accelerometer would sample the walk.
    static func resample(_ rows: [AccelerometerTable.Row], rate: Double) -> [AccelerometerTable.Row] {
        var out: [AccelerometerTable.Row] = []
        var index = 0
        var time = rows[0].time
        while time <= rows[rows.count - 1].time {
            while rows[index + 1].time < time { index += 1 }
            let a = rows[index], b = rows[index + 1]
            let f: Double = (time - a.time) / (b.time - a.time)
            let force: Vector3 = a.specificForce + (b.specificForce - a.specificForce) * f
            let timestamp = Int64((time * 1e9).rounded())
            out.append(AccelerometerTable.Row(time: time, timestamp: timestamp, specificForce: force))
            time += 1 / rate
        }
        return out
    }

    @Test func aPocketWalkCountsThePressurePadsStepsWithinThreePercent() throws {
        let (walk, truth) = try Self.pocketWalk()
        let counted = Self.count(walk.rows)
        // The pads' 111 steps (0 → 1 edges on either heel's pad).
        #expect(truth.count == 111)
        #expect(abs(Double(counted.count - truth.count)) / Double(truth.count) <= 0.03, "counted \(counted.count)")
        // Each step is placed in time: most counted instants lie within 0.3 s of a pad's step.
        let near = counted.filter { instant in truth.contains { abs($0 - Double(instant) * 1e-9) < 0.3 } }
        #expect(Double(near.count) >= 0.9 * Double(counted.count), "\(near.count) of \(counted.count) near a pad step")
    }

    /// Within 4 % (3 % at the recording's rate): since issue 64 a walk counts every candidate of its
    /// run when it starts, and where the walker sets off again after the pause (6.1–7.8 s) the
    /// detector finds candidates 0.3–0.4 s apart while the pads record none for 1.66 s (at 0.5 s a
    /// step): at 25 Hz one more of them crosses (115 counted against the pads' 111).
    @Test func theSameWalkSampledAt25HzCountsAlike() throws {
        let (walk, truth) = try Self.pocketWalk()
        let counted = Self.count(Self.resample(walk.rows, rate: 25))
        #expect(abs(Double(counted.count - truth.count)) / Double(truth.count) <= 0.04, "counted \(counted.count) at 25 Hz")
    }

    /// The sensor stopped for ten hours (nobody watched), and a clock that went back (a device
    /// replaced): each walk after is counted as the first was, from a fresh start. A clock going back
    /// used to silence the detector for good, and a hole to be stepped through at 25 Hz.
    @Test func aWalkAfterAHoleOrAClockGoingBackCountsAsTheFirst() throws {
        let (walk, _) = try Self.pocketWalk()
        let once = Self.count(walk.rows).count
        func shifted(by seconds: Double) -> [AccelerometerTable.Row] {
            walk.rows.map { .init(time: $0.time + seconds, timestamp: $0.timestamp + Int64(seconds * 1e9), specificForce: $0.specificForce) }
        }
        let instants = Self.count(walk.rows + shifted(by: 36_000) + shifted(by: -100))
        #expect(instants.count == 3 * once)
        // No step is placed in the hole.
        #expect(!instants.contains { $0 > 61_000_000_000 && $0 < 36_000_000_000_000 })
    }

    @Test func anIMUTurnedTappedAndSetDownByHandCountsNoSteps() throws {
        let imu = try AccelerometerTable(csv: Self.fixture("broad-24-tapping-slice_imu"))
        #expect(Self.count(imu.rows).isEmpty)
        // The taps do cross the threshold: with the gait gate open they would count.
        var open = StepDetector(parameters: Self.gateOpen(but: nil))
        for row in imu.rows { open.update(specificForce: row.specificForce, timestamp: row.timestamp) { _ in } }
        #expect(open.steps > 0, "\(open.steps)")
    }

    /// Parameters with every part of the gait gate but one left open.
    static func gateOpen(but kept: PartialKeyPath<StepDetector.Parameters>?) -> StepDetector.Parameters {
        var p = StepDetector.Parameters()
        if kept != \StepDetector.Parameters.minimumPeriodicity { p.minimumPeriodicity = -1 }
        if kept != \StepDetector.Parameters.gravityBand { p.gravityBand = 0...100 }
        if kept != \StepDetector.Parameters.minimumVerticalShare { p.minimumVerticalShare = 0 }
        if kept != \StepDetector.Parameters.walkingAmplitudeLimit { p.walkingAmplitudeLimit = .infinity }
        if kept != \StepDetector.Parameters.minimumMagnitudeShare { p.minimumMagnitudeShare = 0 }
        if kept != \StepDetector.Parameters.maximumBounce { p.maximumBounce = .infinity }
        if kept != \StepDetector.Parameters.sustainedSteps { p.sustainedSteps = 0 }
        return p
    }

    static func count(_ motion: (Double) -> Vector3, seconds: Double = 30, parameters: StepDetector.Parameters = .init()) -> Int {
        var detector = StepDetector(parameters: parameters)
        for i in 0..<Int(seconds * 50) {
            let t = Double(i) / 50
            detector.update(specificForce: motion(t), timestamp: Int64(t * 1e9)) { _ in }
        }
        return detector.steps
    }

    /// A device held upright and shaken sideways (±8 m/s² at 1.2 Hz): its magnitude bounces twice
    /// per shake, regularly and at a walking cadence (2.4 a second), but the motion is horizontal. The vertical
    /// share alone keeps it from counting: with only that part of the gate kept, nothing counts;
    /// with the whole gate open, it counts as a walk.
    @Test func aDeviceShakenSidewaysAtAWalkingRateCountsNoSteps() {
        let shake = { (t: Double) in Vector3(x: 8 * sin(2 * .pi * 1.2 * t), y: 0, z: 9.81) }
        #expect(Self.count(shake) == 0)
        #expect(Self.count(shake, parameters: Self.gateOpen(but: \.minimumVerticalShare)) == 0)
        #expect(Self.count(shake, parameters: Self.gateOpen(but: nil)) > 50)
    }

    /// A device turned round and round (0.5 turns/s about x) while it bounces at a walking cadence:
    /// vertical jolts, but the orientation is not steady (its mean specific force over the window
    /// is far below 1 g). The gravity band alone keeps it from counting.
    @Test func aDeviceTurnedOverAndOverCountsNoSteps() {
        let tumble = { (t: Double) -> Vector3 in
            let phase = (t * 1.8).truncatingRemainder(dividingBy: 1)
            let up = 9.81 + (phase < 0.3 ? 3 * (1 - cos(2 * .pi * phase / 0.3)) / 2 : 0)
            let angle = 2 * Double.pi * 0.5 * t
            return Vector3(x: 0, y: up * sin(angle), z: up * cos(angle))
        }
        #expect(Self.count(tumble) == 0)
        #expect(Self.count(tumble, parameters: Self.gateOpen(but: \.gravityBand)) == 0)
        #expect(Self.count(tumble, parameters: Self.gateOpen(but: nil)) > 30)
    }

    @Test func theWalkIsLabelledWalkingAndTheRestPhasesStationary() throws {
        let (walk, _) = try Self.pocketWalk()
        let walking = Self.labels(walk.rows).filter { $0.time >= 10 }
        let share = Double(walking.filter { $0.kind == .walking }.count) / Double(walking.count)
        #expect(share >= 0.9, "walking \(share * 100) % of the walk after 10 s")

        // BROAD's movement column (optical ground truth) marks the rest phases.
        let imu = try AccelerometerTable(csv: Self.fixture("broad-24-tapping-slice_imu"))
        let movement = try Self.fixture("broad-24-tapping-slice_gt").split(whereSeparator: \.isNewline).dropFirst()
            .map { $0.split(separator: ",").last.flatMap { Double($0) } ?? 1 }
        let labels = Self.labels(imu.rows)
        let resting = zip(labels, movement).filter { $0.1 == 0 }.map(\.0)
        let still = Double(resting.filter { $0.kind == .stationary }.count) / Double(resting.count)
        #expect(still >= 0.8, "stationary \(still * 100) % of the rest phases")
        #expect(!labels.contains { $0.kind == .walking || $0.kind == .running })
    }

    /// A device on a table whose noise wavers about the bound of high confidence (0.1 m/s² RMS):
    /// reported once as stationary (and once more if its confidence rises), not at every crossing.
    @Test func aStationaryDeviceWhoseNoiseWaversIsReportedOnce() {
        var detector = StepDetector()
        var classifier = ActivityClassifier()
        var reports: [ActivityClassifier.Activity] = []
        for i in 0..<(60 * 50) {
            let t = Double(i) / 50
            // A vibration of 0.05 or 0.2 m/s² RMS, alternating every 3 s: three tones far above
            // the classifier's 1 s mean, so that its RMS deviation crosses 0.1 m/s² both ways.
            let amplitude = (Int(t / 3) % 2 == 0 ? 0.05 : 0.2) / 1.5.squareRoot()
            let force = Vector3(
                x: amplitude * sin(2 * .pi * 17.1 * t), y: amplitude * sin(2 * .pi * 19.3 * t),
                z: 9.81 + amplitude * sin(2 * .pi * 23.7 * t))
            let timestamp = Int64(t * 1e9)
            detector.update(specificForce: force, timestamp: timestamp) { _ in }
            if let report = classifier.update(specificForce: force, timestamp: timestamp, detector: detector) { reports.append(report) }
        }
        // unknown (from the first sample), then stationary, and at most one rise in its confidence.
        #expect(reports.first?.kind == .unknown && reports.first?.start == 0)
        #expect(reports.dropFirst().allSatisfy { $0.kind == .stationary })
        #expect((2...3).contains(reports.count), "\(reports)")
    }

    /// The activity in force at each row.
    static func labels(_ rows: [AccelerometerTable.Row]) -> [(time: Double, kind: MotionActivityKind?)] {
        var detector = StepDetector()
        var classifier = ActivityClassifier()
        return rows.map { row in
            detector.update(specificForce: row.specificForce, timestamp: row.timestamp) { _ in }
            _ = classifier.update(specificForce: row.specificForce, timestamp: row.timestamp, detector: detector)
            return (row.time, classifier.current?.kind)
        }
    }

    @Test func theTableReadsTheNamedColumnsAndRejectsWhatItCannotUse() throws {
        let table = try AccelerometerTable(csv: "gx,t,az,ay,ax\n9,0.0,9.8,0.1,0.2\n9,0.02,9.7,0.3,0.4\n")
        #expect(table.rows[1].specificForce == Vector3(x: 0.4, y: 0.3, z: 9.7))
        #expect(table.rows[1].timestamp == 20_000_000)
        #expect(throws: AccelerometerTable.ParseError.missingColumns(["az"])) { try AccelerometerTable(csv: "t,ax,ay\n0,1,2\n") }
        #expect(throws: AccelerometerTable.ParseError.badRow(line: 3)) { try AccelerometerTable(csv: "t,ax,ay,az\n0,1,2,3\n1,x,2,3\n") }
        // Issue 40, defect 13: a repeated time (one or two in a real phone's 20,000 rows) is left out
        // and counted, as the daemon skips it; a time going back is still refused, naming its line.
        let repeated = try AccelerometerTable(csv: "t,ax,ay,az\n1,1,2,3\n1,1,2,4\n1.02,1,2,3\n")
        #expect(repeated.rows.map(\.time) == [1, 1.02] && repeated.repeatedTimes == 1)
        #expect(throws: AccelerometerTable.ParseError.timeGoesBack(line: 4)) { try AccelerometerTable(csv: "t,ax,ay,az\n1,1,2,3\n1.02,1,2,3\n1.01,1,2,3\n") }
        // A time nanoseconds cannot hold is refused, not a trap in the conversion.
        #expect(throws: AccelerometerTable.ParseError.timeOutOfRange(line: 3)) { try AccelerometerTable(csv: "t,ax,ay,az\n0,1,2,3\n1e300,1,2,3\n") }
        #expect(throws: IMUTable.ParseError.badRow(line: 3)) { try IMUTable(csv: "t,ax,ay,az,gx,gy,gz,mx,my,mz\n0,0,0,9.8,0,0,0,,,\n1e300,0,0,9.8,0,0,0,,,\n") }
    }
}
