import Foundation
import MotionCore
import Testing
import TestSupport

@testable import MotionFusion

/// A device's timestamps are untrusted input: any Int64 (MotionCore's `TimestampArithmetic`). Each
/// filter that measures time from them takes Int64.min, Int64.max, 0, jumps of ±2^62 by turns and a
/// clock running backwards without trapping and without a non-finite output, treats them as gaps,
/// and works as before once sane timestamps resume.
@Suite struct HostileTimestampFilterTests {
    static func isFinite(_ motion: SensorFusion) -> Bool {
        AttitudeReferenceFrame.allCases.allSatisfy { storedDoubles(in: motion.deviceMotion(in: $0)).allSatisfy(\.isFinite) }
    }

    /// The fusion, with a gyroscope (its period estimator) and without (the gyroscope-free filter's
    /// magnetometer interval), at rest face up at 100 Hz; hostile stamps; then sane ones again, 3 s
    /// at rest and 1 s turning at 1 rad/s about z, which the arbitrary frame's yaw must show.
    @Test(arguments: [true, false])
    func sensorFusionTakesHostileTimestampsAndGoesOnTurning(withGyroscope: Bool) {
        var fusion = SensorFusion(gyroscopeRate: withGyroscope ? 100 : nil, accelerometerRate: 100, magnetometerRate: 100)
        let device = DeviceNumber(0)
        let force = Vector3(x: 0, y: 0, z: Units.standardGravity)
        func scan(at t: Int64, rate: Vector3 = .zero, field: Vector3 = Vector3(x: 20, y: 0, z: -40)) {
            if withGyroscope { fusion.update(SensorSample(kind: .gyroscope, device: device, timestamp: t, vector: rate)) }
            fusion.update(SensorSample(kind: .accelerometer, device: device, timestamp: t, vector: force))
            fusion.update(SensorSample(kind: .magnetometer, device: device, timestamp: t, vector: field))
        }
        for k in 0..<200 { scan(at: 1_000_000_000 + Int64(k) * 10_000_000) }
        var nonFinite: [Int64] = []
        for t in hostileTimestamps {
            scan(at: t)
            if !Self.isFinite(fusion) { nonFinite.append(t) }
        }
        #expect(nonFinite.isEmpty, "non-finite motion after the samples stamped \(nonFinite)")
        let resumed: Int64 = 5_000_000_000
        for k in 0..<300 { scan(at: resumed + Int64(k) * 10_000_000) }
        let before = fusion.deviceMotion().attitude.yaw
        var angle = 0.0
        for k in 300..<400 {
            angle += 0.01
            // The field turns the other way in the device frame.
            scan(at: resumed + Int64(k) * 10_000_000, rate: Vector3(x: 0, y: 0, z: withGyroscope ? 1 : 0),
                field: Vector3(x: 20 * cos(angle), y: -20 * sin(angle), z: -40))
        }
        #expect(Self.isFinite(fusion))
        let gravity = fusion.deviceMotion().gravity
        #expect(abs(gravity.z + 1) < 0.01, "face up: gravity (0, 0, −1) g, got \(gravity)")
        if withGyroscope {
            let turned = remainder(fusion.deviceMotion().attitude.yaw - before, 2 * .pi)
            #expect(abs(turned - 1) < 0.02, "1 rad turned in the arbitrary frame, integrated \(turned) rad")
            print("SensorFusion after hostile timestamps: turned \(turned) rad of 1 rad")
        }
    }

    /// The accelerometer's gait and gesture filters (as `GaitStage` and `EventStage` feed them) take
    /// the hostile stamps, then count a real walk (Fixtures: 60 s in a back pocket, 50 Hz) as a fresh
    /// detector does.
    @Test func gaitAndGestureFiltersTakeHostileTimestampsThenCountAWalk() throws {
        let (walk, _) = try StepDetectorTests.pocketWalk()
        let clean = StepDetectorTests.count(walk.rows).count
        var steps = StepDetector()
        var activity = ActivityClassifier()
        var gestures = GestureRecognizer()
        var instants: [Int64] = []
        var activities: [ActivityClassifier.Activity] = []
        func feed(_ force: Vector3, at t: Int64) {
            steps.update(specificForce: force, timestamp: t) { instants.append($0) }
            if let change = activity.update(specificForce: force, timestamp: t, detector: steps) { activities.append(change) }
            gestures.update(specificForce: force, timestamp: t, isWalking: steps.isWalking) { _ in }
        }
        // Shaken hard between the stamps, so that the gesture detectors have a window to measure.
        for (k, t) in hostileTimestamps.enumerated() { feed(Vector3(x: k % 2 == 0 ? 30 : -30, y: 0, z: 9.8), at: t) }
        let counted = instants.count
        for row in walk.rows { feed(row.specificForce, at: row.timestamp) }
        #expect(instants.count - counted == clean, "the walk after hostile stamps: \(instants.count - counted) steps, alone \(clean)")
        #expect(activities.last?.kind == .walking, "\(activities.suffix(3))")
        #expect(steps.stepPeriod.map(\.isFinite) ?? false)
        print("after hostile timestamps: \(instants.count - counted) steps of \(clean), activity \(String(describing: activities.last?.kind))")
    }

    /// A board whose clock counts past Int64.max and wraps to Int64.min halfway through the walk: the
    /// wrap is a jump back, after which the detector starts over (as after any clock going back,
    /// StepDetectorTests), and every step's instant is one of the clock's, never an overflow.
    @Test func aWalkOnAClockThatWrapsPastInt64MaxStartsOverAtTheWrap() throws {
        let (walk, _) = try StepDetectorTests.pocketWalk()
        let start = Int64.max - 30_000_000_000
        let rows = walk.rows.map { AccelerometerTable.Row(time: $0.time, timestamp: start &+ $0.timestamp, specificForce: $0.specificForce) }
        let split = try #require(rows.firstIndex { $0.timestamp < start })
        let alone = (before: StepDetectorTests.count(Array(rows[..<split])), after: StepDetectorTests.count(Array(rows[split...])))
        let counted = StepDetectorTests.count(rows)
        #expect(counted == alone.before + alone.after, "the halves counted apart: \(alone.before.count) + \(alone.after.count)")
        #expect(!alone.before.isEmpty && !alone.after.isEmpty)
        print("a walk across the wrap: \(counted.count) steps (\(alone.before.count) + \(alone.after.count))")
    }

    /// The barometer's filters: the altitude's precision stays finite, and a floor climbed on foot
    /// once the clock is sane is counted; a walk stamped Int64.max on a clock that then went back is
    /// not a recent walk on the sane one (a climb without walking counts no floor).
    @Test func altitudeAndFloorsTakeHostileTimestamps() {
        var altimeter = AltitudeEstimator()
        var floors = FloorCounter()
        var readings: [AltitudeEstimator.Reading] = []
        let ground = 101.325
        for t in hostileTimestamps {
            if let reading = altimeter.update(pressure: ground, timestamp: t) { readings.append(reading) }
            _ = floors.update(altitude: 0, timestamp: t, isWalking: true)
        }
        // Standing, then 4 m up (a floor) over 20 s at 1 Hz, without walking: no floor.
        func climb(from start: Int64, walking: Bool) {
            for k in 0...30 {
                let height = 4 * min(1, Double(k) / 20)
                let pressure = ground * (1 - height / 8434.5)  // the barometric scale height near sea level
                let t = start + Int64(k) * 1_000_000_000
                if let reading = altimeter.update(pressure: pressure, timestamp: t) {
                    readings.append(reading)
                    _ = floors.update(altitude: reading.altitude, timestamp: t, isWalking: walking)
                }
            }
        }
        climb(from: 1_000_000_000, walking: false)
        #expect(floors.ascended == 0, "a climb without a walk on the sane clock")
        climb(from: 100_000_000_000, walking: true)
        #expect(floors.ascended == 1, "a climb on foot")
        let nonFinite = readings.filter { !$0.altitude.isFinite || !($0.precision?.isFinite ?? true) }
        #expect(nonFinite.isEmpty, "\(nonFinite.prefix(3))")
        #expect(readings.last?.precision != nil)
    }
}
