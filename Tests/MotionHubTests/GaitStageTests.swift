import Foundation
import MotionCore
import MotionFusion
import MotionWire
import Testing

@testable import MotionHub

/// The pipeline's gait stage driven directly, with samples: no socket, no hub. Its reference is the
/// library's own detectors run on the same samples.
@Suite struct GaitStageTests {
    /// Monotonic instants as Unix time: a fixed offset (2026-11-27), so the history's minutes are known.
    static let unixOffset: Int64 = 1_795_800_000_000_000_000

    /// 20 s of a walk at 50 Hz: 1.8 steps/s, each a vertical jolt (a raised cosine of 3 m/s²) on
    /// gravity, the device tilted 30°; specific force, m/s².
    static let walk: [(t: Int64, force: Vector3)] = (0..<(20 * 50)).map { i in
        let t = Double(i) / 50
        let phase = (t * 1.8).truncatingRemainder(dividingBy: 1)
        let jolt: Double = phase < 0.3 ? 1.5 * (1 - cos(2 * Double.pi * phase / 0.3)) : 0
        let up = 9.81 + jolt
        let tilt = 30 * Double.pi / 180
        return (Int64(t * 1e9), Vector3(x: 0, y: up * sin(tilt), z: up * cos(tilt)))
    }

    /// A stage whose detectors are fed, as while someone watches the steps.
    static func stage() -> GaitStage {
        var stage = GaitStage(history: GaitHistory(now: unixOffset), wallClock: { $0 + unixOffset })
        stage.follow(detecting: true)
        return stage
    }

    @Test func aWalkSendsTheStepDetectorsCountAndFillsTheHistory() throws {
        var stage = Self.stage()
        var sent: [PedometerMessage] = []
        for sample in Self.walk {
            if let pedometer = stage.update(specificForce: sample.force, at: sample.t).pedometer { sent.append(pedometer) }
        }
        var detector = StepDetector()
        for sample in Self.walk { detector.update(specificForce: sample.force, timestamp: sample.t) { _ in } }
        #expect(detector.steps >= 25, "\(detector.steps) steps: the walk is one")
        #expect(zip(sent, sent.dropFirst()).allSatisfy { $0.steps < $1.steps }, "one PEDOMETER per sample that counted, the count rising")
        #expect(sent.last?.steps == detector.steps)
        let last = try #require(sent.last)
        #expect(abs(last.distance - Double(detector.steps) * stage.stepLength) < 1e-9)
        #expect(abs(try #require(last.cadence) - 1.8) < 0.1, "1.8 steps/s")
        #expect(stage.history.totalSteps == detector.steps && stage.historyRevision > 0)
        let now = Self.unixOffset + 20_000_000_000
        #expect(stage.history.steps(from: 1_795_800_000 - 60, to: 1_795_800_060, now: now) == detector.steps, "in the history's minute")
        #expect(stage.activity?.activity == .walking)
    }

    /// Pressure at `altitude` m in the standard atmosphere, kPa: p = 101.325 (1 − 2.25577e−5 h)^5.25588
    /// (the ICAO standard atmosphere's troposphere, as NOAA's pressure-altitude formula writes it).
    static func pressure(at altitude: Double) -> Double { 101.325 * pow(1 - 2.25577e-5 * altitude, 5.25588) }

    /// 4 m climbed on foot is one floor (3 m each), the altitudes those of the standard atmosphere;
    /// the sensors stopping keeps the count, floors included, and forgets the activity and altitude.
    @Test func aFloorClimbedOnFootIsCountedAndOutlivesTheSensors() throws {
        var stage = Self.stage()
        var floors: [PedometerMessage] = []
        var altitudes: [AltitudeMessage] = []
        // The pressure sensor at 10 Hz, climbing 0.2 m/s.
        func climbed(_ t: Int64) -> Double { 0.2 * Double(t) * 1e-9 }
        for (index, sample) in Self.walk.enumerated() {
            _ = stage.update(specificForce: sample.force, at: sample.t)
            guard index % 5 == 0 else { continue }
            let made = stage.update(pressure: Self.pressure(at: climbed(sample.t)), at: sample.t)
            if let pedometer = made.pedometer { floors.append(pedometer) }
            altitudes.append(try #require(made.altitude))
        }
        var altimeter = AltitudeEstimator()
        var reference = FloorCounter()
        var detector = StepDetector()
        var counted = 0
        for (index, sample) in Self.walk.enumerated() {
            detector.update(specificForce: sample.force, timestamp: sample.t) { _ in }
            guard index % 5 == 0, let reading = altimeter.update(pressure: Self.pressure(at: climbed(sample.t)), timestamp: sample.t) else { continue }
            if reference.update(altitude: reading.altitude, timestamp: sample.t, isWalking: detector.isWalking) { counted += 1 }
        }
        #expect(counted == 1 && floors.count == 1 && floors.last?.floorsAscended == 1, "the library counted \(counted)")
        let last = try #require(altitudes.last)
        #expect(abs(last.altitude - climbed(last.timestamp)) < 0.5, "\(last.altitude) m at \(climbed(last.timestamp)) m")
        #expect(stage.latest(.altitude) == .altitude(last))
        let before = stage.pedometer
        stage.sensorsStopped()
        #expect(stage.pedometer == before && stage.pedometer.floorsAscended == 1)
        #expect(stage.activity == nil && stage.latest(.altitude) == nil && stage.latest(.pedometer) == .pedometer(before))
    }

    /// A new step length (a height set on reload) changes the distance and pace a poll gets at once,
    /// not from the next step: distance = steps × length, pace = 1 / (cadence × length).
    @Test func aNewStepLengthAppliesToTheCountAtOnce() throws {
        var stage = Self.stage()
        for sample in Self.walk { _ = stage.update(specificForce: sample.force, at: sample.t) }
        let cadence = try #require(stage.pedometer.cadence)
        stage.stepLength = 0.9
        #expect(abs(stage.pedometer.distance - Double(stage.pedometer.steps) * 0.9) < 1e-9)
        #expect(abs(try #require(stage.pedometer.pace) - 1 / (cadence * 0.9)) < 1e-12)
    }

    /// Not `detecting` (nobody wants steps, and no history is kept), the walk feeds nothing: no
    /// message, no step in the history, no activity. Fed again, it counts a walk as the library's
    /// detector does, from a detector started afresh.
    @Test func aStageNotDetectingFeedsNoDetectorUntilItIsAgain() throws {
        var stage = Self.stage()
        stage.follow(detecting: false)
        var made = 0
        for sample in Self.walk {
            let (pedometer, activity) = stage.update(specificForce: sample.force, at: sample.t)
            made += (pedometer == nil ? 0 : 1) + (activity == nil ? 0 : 1)
        }
        #expect(made == 0 && stage.history.totalSteps == 0 && stage.historyRevision == 0 && stage.activity == nil && !stage.isWalking)
        stage.follow(detecting: true)
        let later = Self.walk.map { (t: $0.t + 30_000_000_000, force: $0.force) }
        for sample in later { _ = stage.update(specificForce: sample.force, at: sample.t) }
        var detector = StepDetector()
        for sample in later { detector.update(specificForce: sample.force, timestamp: sample.t) { _ in } }
        #expect(stage.history.totalSteps == detector.steps && detector.steps >= 25, "\(stage.history.totalSteps) of \(detector.steps)")
        #expect(stage.activity?.activity == .walking)
    }

    @Test func aStageGoesOnFromTheSavedCount() {
        var history = GaitHistory(now: Self.unixOffset)
        history.add(steps: 1_000, at: Self.unixOffset - 60_000_000_000)
        let stage = GaitStage(history: history, wallClock: { $0 + Self.unixOffset })
        #expect(stage.pedometer.steps == 1_000 && abs(stage.pedometer.distance - 1_000 * LiveSettings.defaults.stepLength) < 1e-9)
    }
}
