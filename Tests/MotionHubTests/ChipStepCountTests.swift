import Foundation
import MotionCore
import MotionWire
import Testing

@testable import MotionHub

/// The chip's step counter reconciled with the history, each case a thing that happens to a real
/// counter: counts that rise, a wrap at the counter's top (the bma400's is 24 bits:
/// `bma400_get_steps_reg`, drivers/iio/accel/bma400_core.c:797–812, Linux 6.12; the bmi270's 16:
/// `bmi270_read_steps`), a reset (the bmi270's write of 0, `bmi270_write_raw`; a chip that lost
/// power), a jump no one walks, a restart of the daemon with the saved count, and another counter.
@Suite struct ChipStepCountTests {
    static let bma400 = Int64(1) << 24
    static let bmi270 = Int64(1) << 16
    /// A Unix time, ns (2026-12-08).
    static let t0: Int64 = 1_796_700_000_000_000_000
    static func at(_ seconds: Double) -> Int64 { t0 + Int64(seconds * 1e9) }

    @Test func aRisingCountAddsTheStepsSinceTheLastReadingAndTheFirstAddsNone() {
        let (first, reading) = ChipStepCount.reconcile(nil, device: "iio:device0", count: 1000, modulus: Self.bma400, at: Self.at(0))
        #expect(reading == .first, "steps counted before the daemon read the chip have no time: not added")
        let (second, steps) = ChipStepCount.reconcile(first, device: "iio:device0", count: 1018, modulus: Self.bma400, at: Self.at(10))
        #expect(steps == .steps(18))
        #expect(second.count == 1018 && second.time == Self.at(10))
    }

    /// 16,777,200 then 20, 20 s later: 16 steps to the top (2^24 = 16,777,216), then 20 more.
    @Test func aCountBelowTheLastNearTheTopWrapped() {
        let last = ChipStepCount(device: "iio:device0", count: Self.bma400 - 16, time: Self.at(0))
        let (_, reading) = ChipStepCount.reconcile(last, device: "iio:device0", count: 20, modulus: Self.bma400, at: Self.at(20))
        #expect(reading == .wrapped(steps: 36))
        // The bmi270's 16 bits, read signed by its driver and taken modulo 2^16 by the device layer:
        // 32,760 then −32,766 (65,536 − 32,766 = 32,770): 10 steps across the sign bit, no wrap at all.
        let signed = ChipStepCount(device: "iio:device1", count: 32_760, time: Self.at(0))
        let (_, acrossSign) = ChipStepCount.reconcile(signed, device: "iio:device1", count: 32_770, modulus: Self.bmi270, at: Self.at(5))
        #expect(acrossSign == .steps(10))
        let top = ChipStepCount(device: "iio:device1", count: Self.bmi270 - 3, time: Self.at(0))
        let (_, wrapped) = ChipStepCount.reconcile(top, device: "iio:device1", count: 7, modulus: Self.bmi270, at: Self.at(5))
        #expect(wrapped == .wrapped(steps: 10))
    }

    /// 5,000 then 12 a minute later: 4,988 steps to the top could not be walked in a minute (300 at
    /// 5 a second), so the counter was reset, and its 12 are the steps since.
    @Test func aCountBelowTheLastFarFromTheTopWasAReset() {
        let last = ChipStepCount(device: "iio:device0", count: 5_000, time: Self.at(0))
        let (next, reading) = ChipStepCount.reconcile(last, device: "iio:device0", count: 12, modulus: Self.bma400, at: Self.at(60))
        #expect(reading == .reset(steps: 12))
        #expect(next.count == 12)
        // Where the width is unknown, a count that went down is a reset.
        let (_, unknownWidth) = ChipStepCount.reconcile(last, device: "iio:device0", count: 12, modulus: 0, at: Self.at(60))
        #expect(unknownWidth == .reset(steps: 12))
    }

    /// 100,000 steps in 60 s is 1,667 a second: not added; the next reading counts from it.
    @Test func aJumpNoOneWalksIsNotAddedAndCountingGoesOnFromIt() {
        let last = ChipStepCount(device: "iio:device0", count: 100, time: Self.at(0))
        let (next, reading) = ChipStepCount.reconcile(last, device: "iio:device0", count: 100_100, modulus: Self.bma400, at: Self.at(60))
        guard case .implausible(let count, let seconds) = reading else {
            Issue.record("\(reading): 100,000 steps in a minute was added")
            return
        }
        #expect(count == 100_100 && abs(seconds - 60) < 1e-9)
        #expect(reading.steps == 0)
        let (_, after) = ChipStepCount.reconcile(next, device: "iio:device0", count: 100_110, modulus: Self.bma400, at: Self.at(70))
        #expect(after == .steps(10))
        // 300 steps in 60 s, 5 a second, the fastest anyone walks: added.
        let (_, fast) = ChipStepCount.reconcile(last, device: "iio:device0", count: 400, modulus: Self.bma400, at: Self.at(60))
        #expect(fast == .steps(300))
        // A clock set back gives no time; a few steps are still taken (10 s at 5 a second).
        let (_, setBack) = ChipStepCount.reconcile(last, device: "iio:device0", count: 140, modulus: Self.bma400, at: Self.at(-3600))
        #expect(setBack == .steps(40))
    }

    /// A counter that goes down and up again (0, 50, 0, 50… read each second: each rise 50 steps, each
    /// fall a reset) adds no more than 5 steps a second on average, however often it is read: over
    /// 100 s at most 500 plus the first allowance (50), where a fresh bound per reading added 2,500.
    @Test func aCounterGoingDownAndUpAddsNoMoreThanFiveStepsASecond() {
        var state: ChipStepCount? = nil
        var added = 0
        for second in 0...100 {
            let (next, reading) = ChipStepCount.reconcile(
                state, device: "iio:device0", count: second % 2 == 0 ? 0 : 50, modulus: Self.bma400, at: Self.at(Double(second)),
                elapsed: second == 0 ? nil : 1)
            state = next
            added += reading.steps
        }
        #expect(added <= 5 * 100 + 50, "\(added) steps in 100 s")
        #expect(added >= 5 * 100 - 50, "\(added) steps in 100 s: the allowance still fills at 5 a second")
    }

    /// The wall clock stepped a day ahead between two readings 10 s apart on the monotonic clock: the
    /// shorter time counts, and 100,000 steps are not added.
    @Test func aWallClockSteppedAheadWidensNothing() {
        let last = ChipStepCount(device: "iio:device0", count: 100, time: Self.at(0))
        let (_, reading) = ChipStepCount.reconcile(last, device: "iio:device0", count: 100_100, modulus: Self.bma400, at: Self.at(86_410), elapsed: 10)
        #expect(reading.steps == 0)
        let (_, walked) = ChipStepCount.reconcile(last, device: "iio:device0", count: 140, modulus: Self.bma400, at: Self.at(86_410), elapsed: 10)
        #expect(walked == .steps(40))
    }

    @Test func anotherCountersReadingStartsAfresh() {
        let last = ChipStepCount(device: "iio:device0", count: 5_000, time: Self.at(0))
        let (next, reading) = ChipStepCount.reconcile(last, device: "iio:device3", count: 7, modulus: Self.bma400, at: Self.at(60))
        #expect(reading == .first)
        #expect(next.device == "iio:device3")
    }

    /// The history keeps the counter's last reading across a save and a load, and drops one no
    /// counter can hold (a file edited by hand).
    @Test func theSavedHistoryKeepsTheCountersLastReading() throws {
        var history = GaitHistory(now: Self.t0)
        history.chipCounter = ChipStepCount(device: "iio:device0", count: 4_321, time: Self.t0)
        let data = try JSONEncoder().encode(history.saved)
        let loaded = GaitHistory(saved: try JSONDecoder().decode(GaitHistory.Saved.self, from: data), now: Self.t0)
        #expect(loaded.chipCounter == history.chipCounter)
        // A history saved before 1.11 has no counter.
        let old = #"{"version":1,"totalSteps":5,"minutes":[],"activities":[]}"#
        #expect(GaitHistory(saved: try JSONDecoder().decode(GaitHistory.Saved.self, from: Data(old.utf8)), now: Self.t0).chipCounter == nil)
        let edited = #"{"version":1,"totalSteps":5,"minutes":[],"activities":[],"chipCounter":{"device":"iio:device0","count":-4,"time":0}}"#
        #expect(GaitHistory(saved: try JSONDecoder().decode(GaitHistory.Saved.self, from: Data(edited.utf8)), now: Self.t0).chipCounter == nil)
    }
}

/// The gait stage fed the chip's readings: PEDOMETER and ACTIVITY as the chip says, the history
/// filled once, and the step detector's steps not counted twice.
@Suite struct ChipGaitStageTests {
    static let unixOffset = GaitStageTests.unixOffset
    static let device = DeviceNumber(0)

    static func counter(_ count: Int64, at seconds: Double, modulus: Int64 = ChipStepCountTests.bma400) -> SensorSample {
        SensorSample(kind: .stepCounter, device: device, timestamp: Int64(seconds * 1e9), vector: Vector3(x: Double(count), y: Double(modulus), z: 0))
    }

    static func classes(still: Double, walking: Double, running: Double, at seconds: Double) -> SensorSample {
        SensorSample(kind: .activityRecognizer, device: device, timestamp: Int64(seconds * 1e9), vector: Vector3(x: still, y: walking, z: running))
    }

    static func stage() -> GaitStage {
        var stage = GaitStage(history: GaitHistory(now: unixOffset), wallClock: { $0 + unixOffset })
        stage.follow(chipSteps: true, chipActivity: true)
        return stage
    }

    /// Reads at 0, 2 and 4 s of counts 500, 504 and 511: the first is the base, then 4 and 7 steps,
    /// the cadence of the last 7 over 2 s 3.5 steps/s; a read with no new step sends nothing.
    @Test func theChipsCountMakesThePedometerAndTheHistory() throws {
        var stage = Self.stage()
        #expect(stage.update(chip: Self.counter(500, at: 0)).pedometer == nil)
        let first = try #require(stage.update(chip: Self.counter(504, at: 2)).pedometer)
        #expect(first.steps == 4 && first.timestamp == 2_000_000_000)
        let second = try #require(stage.update(chip: Self.counter(511, at: 4)).pedometer)
        #expect(second.steps == 11)
        #expect(abs(try #require(second.cadence) - 3.5) < 1e-9)
        #expect(abs(try #require(second.pace) - 1 / (3.5 * stage.stepLength)) < 1e-12)
        #expect(stage.update(chip: Self.counter(511, at: 6)).pedometer == nil)
        #expect(stage.history.totalSteps == 11)
        #expect(stage.history.steps(from: 1_795_800_000 - 60, to: 1_795_800_060, now: Self.unixOffset + 6_000_000_000) == 11)
        #expect(stage.history.chipCounter?.count == 511)
    }

    /// A restart: a new stage on the saved history goes on from the saved count, adding the steps the
    /// chip counted while the daemon was stopped (an hour: 900 steps is walkable).
    @Test func aRestartAddsTheStepsCountedWhileStopped() throws {
        var stage = Self.stage()
        _ = stage.update(chip: Self.counter(500, at: 0))
        _ = stage.update(chip: Self.counter(520, at: 10))
        let saved = stage.history.saved
        var restarted = GaitStage(history: GaitHistory(saved: saved, now: Self.unixOffset + 3_600_000_000_000), wallClock: { $0 + Self.unixOffset })
        restarted.follow(chipSteps: true, chipActivity: true)
        let pedometer = try #require(restarted.update(chip: Self.counter(1_420, at: 3_600)).pedometer)
        #expect(pedometer.steps == 20 + 900)
        #expect(pedometer.cadence == nil, "the first read of a run dates the steps; it gives no pace")
    }

    /// The chip's classes: walking at 100 % sends ACTIVITY walking, high; the same again (the bma400
    /// sends its activity event with every step, bma400_core.c:1666–1686) sends nothing.
    @Test func theChipsClassesMakeTheActivityOnceEach() throws {
        var stage = Self.stage()
        let walking = try #require(stage.update(chip: Self.classes(still: 0, walking: 100, running: 0, at: 1)).activity)
        #expect(walking.activity == .walking && walking.confidence == .high && walking.start == 1_000_000_000)
        #expect(stage.update(chip: Self.classes(still: 0, walking: 100, running: 0, at: 2)).activity == nil)
        let still = try #require(stage.update(chip: Self.classes(still: 100, walking: 0, running: 0, at: 30)).activity)
        #expect(still.activity == .stationary)
        #expect(stage.update(chip: Self.classes(still: 0, walking: 0, running: 0, at: 31)).activity == nil, "no class: nothing told")
    }

    /// With the chip counting, the step detector's steps on the same walk are not added.
    @Test func theStepDetectorsStepsAreNotCountedTwice() {
        var stage = Self.stage()
        stage.follow(detecting: true)
        for sample in GaitStageTests.walk {
            #expect(stage.update(specificForce: sample.force, at: sample.t).pedometer == nil)
        }
        #expect(stage.history.totalSteps == 0)
        #expect(stage.isWalking, "the detector still tells a walk, for the gestures")
        // Without the chip the same walk counts (the control).
        var software = GaitStageTests.stage()
        for sample in GaitStageTests.walk { _ = software.update(specificForce: sample.force, at: sample.t) }
        #expect(software.history.totalSteps > 0)
    }
}
