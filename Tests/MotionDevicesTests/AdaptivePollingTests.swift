import Foundation
import MotionCore
import MotionDevices
import Testing

/// When a polled accelerometer that only event streams read is polled fast or slowly: the readings
/// are of poses whose difference is known (a tilt of θ moves gravity's vector by 2 g sin(θ/2)).
@Suite struct AdaptivePollingTests {
    static let g = Units.standardGravity

    /// Specific force of a device tilted `degrees` about x from lying face up, m/s².
    static func tilted(_ degrees: Double) -> Vector3 {
        let θ = degrees * .pi / 180
        return Vector3(x: 0, y: g * sin(θ), z: g * cos(θ))
    }

    @Test func aDeviceLyingStillIsPolledAtTheRestRate() {
        var polling = AdaptivePolling(movingRate: 4)
        // A hand's tremor or a chip's noise: 0.5° back and forth (0.009 g), every 0.8 s for a minute.
        for i in 0..<75 { polling.update(Self.tilted(i % 2 == 0 ? 0 : 0.5), at: Int64(i) * 800_000_000) }
        #expect(!polling.isMoving && polling.rate == 1.25)
    }

    /// A quarter turn read mid-way (45°: 0.77 g from face up) is moving: polled at the streams' rate
    /// until the readings have held within 0.1 g for 1.5 s.
    @Test func aTurnIsPolledFastUntilItHasSettled() {
        var polling = AdaptivePolling(movingRate: 4)
        polling.update(Self.tilted(0), at: 0)
        polling.update(Self.tilted(45), at: 800_000_000)
        #expect(polling.isMoving && polling.rate == 4)
        polling.update(Self.tilted(90), at: 1_050_000_000)
        // Still from 1.05 s: fast until 1.5 s later.
        var t: Int64 = 1_050_000_000
        while t < 2_500_000_000 {
            t += 250_000_000
            polling.update(Self.tilted(90), at: t)
            #expect(polling.isMoving == (t < 2_550_000_000), "at \(t) ns")
        }
        polling.update(Self.tilted(90), at: 2_800_000_000)
        #expect(!polling.isMoving && polling.rate == 1.25)
    }

    /// 0.1 g is a tilt of 5.7°: 5° is not moving, 7° is.
    @Test func theThresholdIsATiltOfAboutSixDegrees() {
        var small = AdaptivePolling(movingRate: 4)
        small.update(Self.tilted(0), at: 0)
        small.update(Self.tilted(5), at: 1)
        var larger = AdaptivePolling(movingRate: 4)
        larger.update(Self.tilted(0), at: 0)
        larger.update(Self.tilted(7), at: 1)
        #expect(!small.isMoving && larger.isMoving)
    }

    /// Woken by the chip's events, a still device is read once a heartbeat; an event has it read at
    /// the streams' rate until it has settled, as a move seen by a reading would.
    @Test func eventsLetAStillDeviceSleepForAHeartbeatAndAnEventWakesIt() {
        var polling = AdaptivePolling(movingRate: 4, heartbeat: 30)
        polling.wakeOnEvents(true)
        polling.update(Self.tilted(0), at: 0)
        #expect(polling.rate == 1.0 / 30)
        let readsAtOnce = polling.motionReported(at: 10_000_000_000)
        #expect(readsAtOnce, "resting, last read 10 s ago: read at once")
        #expect(polling.isMoving && polling.rate == 4)
        polling.update(Self.tilted(0), at: 10_250_000_000)
        #expect(polling.isMoving, "still within 1.5 s of the event")
        polling.update(Self.tilted(0), at: 11_600_000_000)
        #expect(!polling.isMoving && polling.rate == 1.0 / 30 && polling.unannouncedChange == nil)
    }

    /// An event brings the next read forward to now only while the device rests and its last read
    /// is a moving period (0.25 s) old; else the read the moving timer makes within that period
    /// serves it.
    @Test func anEventReadsAtOnceOnlyWhereNoReadIsDueSooner() {
        var polling = AdaptivePolling(movingRate: 4, heartbeat: 30)
        polling.wakeOnEvents(true)
        polling.update(Self.tilted(0), at: 0)
        let readsAfterARead = polling.motionReported(at: 100_000_000)
        #expect(!readsAfterARead, "read 0.1 s ago: the timer's next read, 0.25 s on, serves it")
        #expect(polling.isMoving && polling.period == 250_000_000)
        let readsWhileMoving = polling.motionReported(at: 200_000_000)
        #expect(!readsWhileMoving, "moving: a read is due within a period")
        polling.update(Self.tilted(0), at: 350_000_000)
        polling.update(Self.tilted(0), at: 2_000_000_000)
        #expect(!polling.isMoving && polling.period == 30_000_000_000)
        let readsRested = polling.motionReported(at: 2_300_000_000)
        #expect(readsRested, "resting, read 0.3 s ago: at once")
    }

    /// The reads of a device lying still whose chip reports motion `eventsPerSecond` times a second
    /// for `seconds` from 1 s on, ns, driven as `PollTicker` drives the value: one read to arm the
    /// events, a periodic timer set to `period` from the instant the rate changes (where
    /// `timerTakes`: else `timerfd_settime` fails and the timer keeps its heartbeat), a read at each
    /// tick, and one at an event only where `motionReported` asks for it.
    static func reads(eventsPerSecond: Double, seconds: Double, timerTakes: Bool = true) -> [Int64] {
        var polling = AdaptivePolling(movingRate: 4, heartbeat: 30)
        polling.wakeOnEvents(true)
        var (period, tick, reads) = (polling.period, Int64(0), [Int64]())
        let (start, end) = (Int64(1_000_000_000), Int64(1_000_000_000 + seconds * 1e9))
        func retime(at t: Int64) {
            guard timerTakes, polling.period != period else { return }
            (period, tick) = (polling.period, t + polling.period)
        }
        func read(at t: Int64) {
            polling.update(tilted(0), at: t)
            if t >= start && t < end { reads.append(t) }
            retime(at: t)
        }
        read(at: 0)
        var event = 0
        while true {
            let next = start + Int64((Double(event) * 1e9 / eventsPerSecond).rounded())
            if next >= end && tick >= end { break }
            if tick <= next {
                let t = tick
                tick += period
                read(at: t)
            } else {
                event += 1
                if polling.motionReported(at: next) { read(at: next) } else { retime(at: next) }
            }
        }
        return reads
    }

    /// A bma250e sends an event per sample while it moves: 15.6 a second at its slowest rate, 125 at
    /// its fastest; a storm sends 100,000. However many come, the device is read at the moving rate
    /// (4 a second) plus at most the one read that starts it (every event read it at once: 19.6, 129
    /// and 100,004 reads a second).
    @Test(arguments: [15.6, 125, 100_000])
    func eventsAddNoReadsBeyondTheMovingRate(eventsPerSecond: Double) {
        let rate = Double(Self.reads(eventsPerSecond: eventsPerSecond, seconds: 5).count) / 5
        #expect(rate <= 4 + 1 && rate >= 4, "\(rate) reads/s")
    }

    /// A timer that cannot be set to the moving rate (`timerfd_settime` failing) keeps its heartbeat
    /// of 30 s, while every event is told a read is due within a moving period: the reads stopped
    /// at the first. An event with no read for two moving periods (a whole tick of the timer missed)
    /// reads: at most 0.5 s and one event's interval between reads.
    @Test(arguments: [15.6, 125, 100_000])
    func aTimerThatCannotBeSetStarvesNoReads(eventsPerSecond: Double) {
        let reads = Self.reads(eventsPerSecond: eventsPerSecond, seconds: 5, timerTakes: false)
        let gaps = zip(reads.dropFirst(), reads).map { Double($0 - $1) * 1e-9 }
        #expect(reads.count >= 9 && gaps.allSatisfy { $0 <= 0.5 + 1 / eventsPerSecond }, "\(reads.count) reads in 5 s, gaps up to \(gaps.max() ?? 5) s")
    }

    /// A quarter turn between two heartbeats with no event since they were armed: the events do
    /// not work, and the change says by how much it moved (1 g · √2 for 90°).
    @Test func aMoveNoEventAnnouncedWhileNoneEverCameIsReported() {
        var polling = AdaptivePolling(movingRate: 4, heartbeat: 30)
        polling.wakeOnEvents(true)
        polling.update(Self.tilted(0), at: 0)
        polling.update(Self.tilted(90), at: 30_000_000_000)
        #expect(polling.unannouncedChange.map { abs($0 - Self.g * 2.0.squareRoot()) < 1e-9 } == true)
    }

    /// Once one event came, the interrupt works: a move too slow for the chip's threshold that only
    /// a heartbeat saw is a move, not a fault.
    @Test func aMoveWithoutAnEventAfterOneCameIsOnlyAMove() {
        var polling = AdaptivePolling(movingRate: 4, heartbeat: 30)
        polling.wakeOnEvents(true)
        polling.update(Self.tilted(0), at: 0)
        let readsAtFirstEvent = polling.motionReported(at: 1_000_000_000)
        #expect(readsAtFirstEvent)
        polling.update(Self.tilted(0), at: 1_250_000_000)
        polling.update(Self.tilted(0), at: 3_000_000_000)
        polling.update(Self.tilted(90), at: 33_000_000_000)
        #expect(polling.unannouncedChange == nil && polling.isMoving)
    }

    /// Arming the events forgets the last reading: a turn made while they were being armed is no
    /// event's to announce.
    @Test func armingTheEventsStartsFromTheNextReading() {
        var polling = AdaptivePolling(movingRate: 4, heartbeat: 30)
        polling.update(Self.tilted(0), at: 0)
        polling.wakeOnEvents(true)
        polling.update(Self.tilted(90), at: 250_000_000)
        #expect(polling.unannouncedChange == nil && !polling.isMoving)
    }
}

/// The motion events' names and records, against the kernel's: attribute names as
/// `industrialio-event.c` builds them from each driver's `iio_event_spec`, codes as the
/// `IIO_EVENT_CODE` macro packs them (include/linux/iio/events.h).
@Suite struct MotionEventsNamesTests {
    /// Which `events/` entries enable a motion event, by driver (drivers/iio, Linux 6.12).
    @Test(arguments: [
        ("in_accel_x_roc_either_en", true),  // bmc150-accel: ROC, either, per axis
        ("in_accel_z_thresh_either_en", true),  // kxcjk-1013: THRESH, either, per axis
        ("in_accel_x&y&z_mag_rising_en", true),  // bmi323, bma400: any-motion
        ("in_accel_x&y&z_mag_falling_en", false),  // bmi323: no-motion; mma8452: free fall
        ("in_accel_roc_rising_en", true),  // inv_mpu6050: wake on motion, shared by type
        ("in_accel_x_mag_adaptive_rising_en", true),  // adxl372 and the like
        ("in_accel_gesture_singletap_en", false),  // taps are not moves of the screen
        ("in_steps_change_en", false),
        ("in_accel_x_roc_either_value", false),
        ("in_anglvel_x_roc_either_en", false),
        ("in_accel_x_y_roc_either_en", false),  // not a modifier the core writes
    ])
    func motionEnableAttributes(name: String, isMotion: Bool) {
        #expect(MotionEvents.isMotionEnable(name) == isMotion)
    }

    /// `IIO_MOD_EVENT_CODE(IIO_ACCEL, 0, IIO_MOD_Y, IIO_EV_TYPE_ROC, IIO_EV_DIR_FALLING)` as
    /// bmc150_accel_handle_roc_event pushes it, with its timestamp: 16 bytes, host order.
    @Test func aRecordDecodesAsTheKernelPacksIt() {
        let id = UInt64(2) << 56 | UInt64(2) << 48 | UInt64(2) << 40 | UInt64(3) << 32
        let bytes = withUnsafeBytes(of: id, Array.init) + withUnsafeBytes(of: Int64(1234), Array.init)
        let record = bytes.withUnsafeBytes { IIOEventRecord($0) }
        #expect(record == IIOEventRecord(id: id, timestamp: 1234))
        #expect(record?.type == 2 && record?.direction == 2 && record?.modifier == 2 && record?.isAccelerometer == true)
        #expect(Array(bytes.prefix(15)).withUnsafeBytes { IIOEventRecord($0) } == nil)
    }
}

/// The hub's hysteresis, judged from the report rates at rest before and after raising it.
@Suite struct HysteresisTrialTests {
    static let still = Vector3(x: 0, y: 0, z: Units.standardGravity)

    /// Runs a trial with `before` and `after` reports a second at rest; returns its verdict.
    static func verdict(before: Int, after: Int) -> HysteresisTrial.Step {
        var trial = HysteresisTrial(startingAt: 0)
        for i in 0..<(2 * before) { trial.report(still, at: Int64(i) * 1_000_000_000 / Int64(before)) }
        guard case .raise(let next) = trial.step(at: 2_000_000_000) else { return .wait(until: -1) }
        for i in 0..<(2 * after) { trial.report(still, at: 2_000_000_000 + Int64(i) * 1_000_000_000 / Int64(max(after, 1))) }
        return trial.step(at: next)
    }

    @Test func aHubSilentOnceRaisedHonoursIt() {
        #expect(Self.verdict(before: 10, after: 0) == .verdict(honoured: true, before: 10, after: 0))
    }

    @Test func aHubReportingAsOftenOnceRaisedIgnoresIt() {
        #expect(Self.verdict(before: 10, after: 10) == .verdict(honoured: false, before: 10, after: 10))
    }

    /// One report a second once raised is a tenth of ten: honoured (a hub may send one as it applies it).
    @Test func aTenthOfTheRateIsStillHonoured() {
        #expect(Self.verdict(before: 10, after: 1) == .verdict(honoured: true, before: 10, after: 1))
    }

    /// A move (0.5 g) in the first phase starts it again: its reports are not counted as rest.
    @Test func aMoveStartsThePhaseAgain() {
        var trial = HysteresisTrial(startingAt: 0)
        trial.report(Self.still, at: 0)
        trial.report(Vector3(x: 0.5 * Units.standardGravity, y: 0, z: Units.standardGravity), at: 1_500_000_000)
        #expect(trial.step(at: 2_000_000_000) == .wait(until: 3_500_000_000))
    }
}
