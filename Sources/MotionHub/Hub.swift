import Logging
import MotionCore
import MotionDevices
import MotionFusion
import MotionSystem
import MotionWire
import NIOCore

/// The coordinator: takes the clients' requests and the devices' comings and goings, and keeps the
/// captures (`CaptureManager`) exactly what the watches (`StreamFanout`) and polls (`PollBroker`)
/// need; samples go through the `MotionPipeline` to the clients' outboxes (`ClientTable`). What it
/// keeps (`StateSaver`), gives back (`MemoryUpkeep`), logs of the calibration (`CalibrationLog`) and
/// reports (`HubReports`) are parts of their own; its clients' entry points are `HubClients` and
/// `HubRequests`. Confined to one event loop: every entry point checks it runs there (capture threads hop to it).
package final class Hub: @unchecked Sendable {
    // @unchecked: all state is touched on `eventLoop` only.
    package typealias ClientID = ClientOutbox.ID

    package let eventLoop: any EventLoop
    package let logger: Logger
    let release: String
    /// Uptime runs on the monotonic clock: setting the wall clock changes it not.
    let startTime = NIODeadline.now()
    let clients: ClientTable
    let fanout: StreamFanout
    let polls: PollBroker
    let captures: CaptureManager
    let pipeline: MotionPipeline
    /// The calibration and the step history, and when they are saved.
    let saver: StateSaver
    /// The heap's trim and the page-out.
    let memory: MemoryUpkeep
    private let calibrationLog: CalibrationLog
    /// The blocking jobs handed off the loop (captures stopping, the state being saved, the
    /// page-out), for shutdown to wait for after `stopAll`, and a test for before it looks.
    package let offLoop: OffLoopWork
    /// The capture plan followed last: the page-out waits for the sensors to settle, not for requests
    /// to stop coming (a POLL replans without changing what runs).
    private var followedPlan: CapturePlan?
    /// Every origin's devices, and who is told when they change.
    private let roster: DeviceRoster
    /// Where the machine is, for `xTrueNorthZVertical`, and the live settings.
    let location = LocationNeed()
    /// What `devices` cannot give, for STATUS (worked out when they change, not per request).
    private(set) var unavailable: StatusReply.Unavailable?
    /// What counts the steps and tells the activity in the plan followed last, for STATUS.
    private(set) var counting: (pedometer: StatusReply.Source?, activity: StatusReply.Source?) = (nil, nil)
    /// Set by `stopAll`: nothing opens a sensor again (a stop finishing off the loop, or a client
    /// still connected, would otherwise replan during shutdown).
    private var stopped = false
    /// Errors since start, by kind, for metrics.
    var errorCounts = [Int](repeating: 0, count: DaemonError.allCases.count)
    /// The sensors re-armed and the machine's sleeps, for STATUS and metrics.
    private(set) var recoveries = SensorRecoveries()
    /// The devices whose capture was closed for the machine's sleep: re-armed at its resume.
    private var closedForSleep: Set<DeviceNumber> = []
    /// Which sleep is under way (counted): a resume that never comes ends the one it was for only.
    private var sleepNumber = 0
    /// The chips (a device's parent in sysfs) whose driver was rebound: each at most once while the
    /// daemon runs, as the device comes back as a new one whose re-arms count from zero again.
    private var reboundChips: Set<String> = []

    /// The machine's sleeps seen since start (logind's, or the clocks'): a front end tells a resume
    /// from a listing of the same devices by it.
    package var sleeps: Int { recoveries.sleeps }
    /// Every origin's devices: this machine's, then each remote's.
    package var devices: [DeviceDescriptor] { roster.devices }
    /// Where the sensors come from.
    package var source: any SensorSource { captures.source }
    /// Connections served at once; more are told so and closed.
    package var maximumClients: Int { clients.maximumClients }

    /// A hub on `eventLoop`, its sensors from `source`, its state kept in `store` (nil: nowhere).
    ///
    /// - Parameters:
    ///   - maximumClients: connections served at once; more are told so and closed.
    ///   - pagesOutWhenSettled: whether the process's code pages are given back 5 s after the sensors
    ///     settle (`MemoryUpkeep`): the daemon's, whose executable no other process maps; not a process
    ///     that hosts hubs among other work.
    ///   - offLoopWork: where the blocking jobs run (saving, the page-out, a capture's stop): each on a
    ///     thread of its own, or `.inline` for a test on an embedded or testing loop (`OffLoopWork`).
    ///   - mountMatrixWording: how the daemon's configuration writes a mount matrix, for the log's
    ///     remedy when a sensor's axes disagree; nil: the matrix alone.
    package init(
        eventLoop: any EventLoop, logger: Logger, release: String, store: StateStore?, source: any SensorSource, maximumClients: Int = 1000,
        pagesOutWhenSettled: Bool = false, offLoopWork: OffLoopWork.Runner = .threads, mountMatrixWording: MountMatrixWording? = nil
    ) {
        self.eventLoop = eventLoop
        self.logger = logger
        self.release = release
        roster = DeviceRoster(logger: logger)
        clients = ClientTable(maximumClients: maximumClients, eventLoop: eventLoop, logger: logger)
        fanout = StreamFanout(clients: clients)
        polls = PollBroker(clients: clients, eventLoop: eventLoop)
        offLoop = OffLoopWork(eventLoop: eventLoop, runner: offLoopWork)
        memory = MemoryUpkeep(
            eventLoop: eventLoop, offLoop: offLoop, logger: logger, pageOut: pagesOutWhenSettled ? ResidentMemory.releaseFilePages : nil)
        calibrationLog = CalibrationLog(logger: logger, mountMatrixWording: mountMatrixWording)
        captures = CaptureManager(source: source, eventLoop: eventLoop, offLoop: offLoop, logger: logger)
        saver = StateSaver(store: store, offLoop: offLoop, eventLoop: eventLoop, logger: logger)
        pipeline = MotionPipeline(
            fanout: fanout, calibration: saver.calibration,
            history: GaitHistory(saved: saver.history.value, now: Syscall.realtimeNanoseconds()), keepsHistory: saver.keepsHistory)
        pipeline.gait.implausibleChipCount = { [logger] count, seconds in
            logger.warning(
                "the chip's step count jumped further than anyone walks: not counted, counting goes on from it",
                metadata: ["count": "\(count)", "seconds": "\(seconds)"])
        }
        polls.demandsChanged = { [unowned self] in replan() }
        // A trigger fired inside a stage's emit: the stage is mid-call, so the replan that disarms
        // the chip comes once it has returned.
        fanout.triggersFired = { [unowned self] in eventLoop.execute { [weak self] in self?.replan() } }
        captures.changed = { [unowned self] in replan() }
        captures.received = { [unowned self] events, device in received(events, from: device) }
        saver.due = { [unowned self] in saveState() }
        pipeline.fusion.gyroscopeCalibrationChanged = { [calibrationLog] in calibrationLog.gyroscopeCalibrationChanged($0, uncertainty: $1) }
        pipeline.fusion.axes.checked = { [unowned self] in calibrationLog.axesChecked($0, $1, devices: devices) }
        pipeline.sampleFused = { [unowned self] in
            if polls.answerReady(pipeline.snapshot(for:)) { replan() }
        }
        // A held presence change is let out at its instant by one timer (replaced when the instant
        // changes, never set per sample): a sensor that reports only changes sends no reading to let
        // it out. Samples are stamped on CLOCK_MONOTONIC, the clock of NIODeadline.uptimeNanoseconds.
        var presenceRelease: Scheduled<Void>?
        pipeline.presenceHeldUntil = { [unowned self] due in
            presenceRelease?.cancel()
            presenceRelease = due.map { due in
                eventLoop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(clamping: due))) { [weak self] in
                    guard let self, !stopped else { return }
                    pipeline.releaseHeldPresence(at: due)
                }
            }
        }
    }

    /// Applies the settings that can change while running (a configuration reload).
    package func apply(_ settings: LiveSettings) {
        eventLoop.preconditionInEventLoop()
        location.settings = settings
        pipeline.fusion.declinationSetting = location.declinationSetting
        pipeline.gait.seaLevelPressure = settings.seaLevelPressure
        pipeline.gait.stepLength = settings.stepLength
        location.follow(watchesTrueNorth: fanout.watchesMotion(in: .xTrueNorthZVertical))
    }

    /// Tells `observer` (nil: nobody) whether the hub needs to know where the machine is, now and at
    /// each change: while a client watches motion in `xTrueNorthZVertical` and the settings give
    /// neither a declination nor a location.
    package func observeLocationNeed(_ observer: ((Bool) -> Void)?) {
        eventLoop.preconditionInEventLoop()
        location.observe(observer)
    }

    /// Where a location service says the machine is: the World Magnetic Model's declination there turns
    /// `xTrueNorthZVertical`, unless the settings give a location or a declination.
    package func updateLocation(_ place: GeographicLocation) {
        eventLoop.preconditionInEventLoop()
        if location.update(place) { pipeline.fusion.declinationSetting = location.declinationSetting }
    }

    /// Saves the calibration and the step history every `interval` while sensors run, and once when
    /// they stop; nothing runs at rest (what is learnt is learnt only while they run).
    package func savesState(every interval: TimeAmount) {
        eventLoop.preconditionInEventLoop()
        saver.savesState(every: interval)
        replan()
    }

    /// Saves the calibration, and the step history if it changed, in the background; the place's
    /// magnetic field is computed again once a month has passed.
    package func saveState() {
        eventLoop.preconditionInEventLoop()
        pipeline.fusion.refreshGeomagneticField()
        // The encoder's code a write brought back goes out again once it is done, as at start-up.
        if saver.save(pipeline.fusion.fusion, pipeline.gait) { memory.pageOutOnceSettled() }
    }

    // MARK: Devices

    /// Calls `observer` at every change of `devices`, on the loop.
    package func observeDevices(_ observer: @escaping ([DeviceDescriptor]) -> Void) {
        eventLoop.preconditionInEventLoop()
        roster.observe(observer)
    }

    /// Takes a listing of `origin`'s devices (at start, when udev reports a change, and every so often
    /// for another machine's), made off the loop: listing blocks (libudev, libiio reading all of IIO's
    /// sysfs, or a board's iiod). It replaces that origin's devices only. A running sensor whose device
    /// went away ends its streams with `ENDED`; one that appeared can be watched at once.
    package func apply(_ listing: Result<DeviceListing, any Error>, from origin: DeviceOrigin = .thisMachine) {
        eventLoop.preconditionInEventLoop()
        switch listing {
        case .success(let listing):
            roster.take(listing, from: origin)
        case .failure(let error):
            // The devices known stay: each capture notices by itself when its device goes away, and
            // the next udev event lists them again.
            errorCounts[DaemonError.discoveryFailed.index] += 1
            logger.error("device discovery failed; the devices known stay", metadata: ["error": "\(error)", "devices": "\(devices.count)"])
            return
        }
        unavailable = CapturePlan.unavailable(on: devices, options: planOptions)
        pipeline.events.vendorUnitLight = Set(devices.filter { $0.sensors.contains { $0.kind == .light && $0.readsVendorUnits == true } }.map(\.number))
        for gone in captures.stop(absentFrom: Set(devices.map(\.number))) {
            logger.notice("sensor removed", metadata: ["device": "\(gone.device)"])
            endStreams(fedBy: gone.device, reason: "\(gone.device) was removed")
        }
        replan()
        roster.changed()
    }

    // MARK: Captures

    /// What the plan may use beside the demands: the chip's functions unless the source is told not
    /// to, and whether the step history is kept (a chip's counter is then read with no one watching).
    var planOptions: CapturePlan.Options {
        CapturePlan.Options(chipFunctions: source.usesChipFunctions, keepsStepHistory: saver.keepsHistory)
    }

    /// Opens, closes and re-opens captures so that exactly what is watched (or polled) runs.
    func replan() {
        guard !stopped else { return }
        let demands = fanout.demands + polls.demands()
        let plan = CapturePlan(demands: demands, devices: devices, options: planOptions)
        counting = Self.counting(in: plan, wanted: Set(demands.map(\.stream)), keepsHistory: saver.keepsHistory)
        let wasIdle = captures.running.isEmpty
        captures.follow(plan, on: devices)
        // A sleep while nothing ran was no capture's: the clocks' difference is taken afresh, so that
        // the first read after it is not taken for an unannounced sleep.
        if wasIdle, !captures.running.isEmpty { recoveries.woke() }
        pipeline.follow(plan, wanted: Set(demands.map(\.stream)), deviceRate: captures.rate(of:))
        saver.follow(plan)
        location.follow(watchesTrueNorth: fanout.watchesMotion(in: .xTrueNorthZVertical))
        if plan != followedPlan { memory.pageOutOnceSettled() }
        followedPlan = plan
    }

    /// What counts the steps and tells the activity in `plan`: the chip's counter or classes where it
    /// reads them, else the step detector on the accelerometer while it runs and detects (a stream
    /// of its is `wanted`, or the history is kept).
    static func counting(
        in plan: CapturePlan, wanted: Set<StreamKind>, keepsHistory: Bool
    ) -> (pedometer: StatusReply.Source?, activity: StatusReply.Source?) {
        let detector = plan.captures.first { $0.kinds.contains(.accelerometer) && $0.device != plan.baseAccelerometer }
            .flatMap { keepsHistory || !wanted.isDisjoint(with: GaitStage.streamsDetecting) ? $0.device : nil }
        func source(_ chip: SensorKind) -> StatusReply.Source? {
            if let device = plan.device(readingChip: chip) { return StatusReply.Source(source: chip.rawValue, device: device.sysname) }
            return detector.map { StatusReply.Source(source: SensorKind.accelerometer.rawValue, device: $0.sysname) }
        }
        return (source(.stepCounter), source(.activityRecognizer))
    }

    /// Ingests one read's events from a capture, with one write per client for the whole burst:
    /// when the loop falls behind, bursts grow and the system calls per line shrink, instead of the
    /// backlog growing.
    private func received(_ events: [SensorEvent], from number: DeviceNumber) {
        // Without logind, a sleep shows as the boot clock running ahead of the monotonic one: the
        // captures are re-armed as after a resume it announced (two vDSO reads per read, not per sample).
        if recoveries.sleptUnannounced() {
            logger.notice("the machine slept unannounced (its boot clock ran ahead): sensors re-armed")
            _ = captures.sleep()
            rearmAfterSleep(Set(captures.runningOrStopping))
            roster.changed()
        }
        clients.batch {
            for event in events { ingest(event, from: number) }
            pipeline.deliverPendingMotion()
        }
    }

    private func ingest(_ event: SensorEvent, from number: DeviceNumber) {
        switch event {
        case .sample(let sample):
            guard let period = captures.count(sample, from: number) else { return }  // in flight from a closed capture
            pipeline.add(sample, period: period, from: number)
        case .captureModeChanged(let mode, let reason):
            logger.notice("sensor capture mode changed", metadata: ["device": "\(number)", "mode": "\(mode)", "reason": "\(reason)"])
        case .restModeChanged(let mode, let reason):
            var metadata: Logger.Metadata = ["device": "\(number)", "mode": "\(mode.rawValue)"]
            if let reason { metadata["reason"] = "\(reason)" }
            logger.notice("accelerometer at rest woken by \(mode.rawValue)", metadata: metadata)
        case .readFailed(let error):
            errorCounts[DaemonError.readFailed.index] += 1
            logger.warning("sensor read failed", metadata: ["device": "\(number)", "error": "\(error)"])
        case .readComplete:
            break  // the mailbox wakes the loop on it and does not pass it on
        case .rearming(let reason, let attempt, let delay):
            recoveries.count(reason, of: number)
            if attempt == CapturePolicy.rebindAttempt { rebind(number) }
            logger.notice("sensor re-armed", metadata: [
                "device": "\(number)", "reason": "\(reason.rawValue)", "attempt": "\(attempt)", "reopens_in_s": "\(delay)"])
        case .ended(let error):
            errorCounts[DaemonError.sensorEnded.index] += 1
            logger.warning("sensor ended", metadata: ["device": "\(number)", "reason": "\(error)"])
            guard captures.ended(number) != nil else { return }
            endStreams(fedBy: number, reason: error.meansDeviceGone ? "\(number) was removed" : "\(error)")
            if error.meansDeviceGone { roster.remove(number) }
            replan()
            if error.meansDeviceGone { roster.changed() }
        }
    }

    /// Ends the streams that `device`'s capture fed in the plan it ran in (the one followed last).
    /// Asks the source to unbind and bind `number`'s driver, off the loop (sysfs writes that re-probe a
    /// chip), once its re-arms have failed `CapturePolicy.rebindAttempt` − 1 times; the device comes
    /// back through hot-plug.
    private func rebind(_ number: DeviceNumber) {
        guard let device = devices.first(where: { $0.number == number }) else { return }
        let chip = String(device.syspath[..<(device.syspath.lastIndex(of: "/") ?? device.syspath.endIndex)])
        guard reboundChips.insert(chip).inserted else { return }
        let source = source
        offLoop.run({ () throws(DeviceError) in try source.rebind(device) }, then: { [logger] result in
            switch result {
            case .success(nil): break
            case .success(let rebound?): logger.notice("sensor's driver unbound and bound again, as no re-arm woke it", metadata: ["device": "\(number)", "rebound": "\(rebound)"])
            case .failure(let error): logger.error("sensor's driver could not be rebound", metadata: ["device": "\(number)", "error": "\(error)"])
            }
        })
    }

    private func endStreams(fedBy device: DeviceNumber, reason: String) {
        guard let plan = followedPlan else { return }
        fanout.endStreams(fedBy: device, in: plan, reason: reason)
    }

    // MARK: Sleep

    /// The machine is about to sleep (logind's `PrepareForSleep(true)`): saves the calibration and the
    /// step history (waiting for the disk: the machine may never wake), and closes every capture, its
    /// buffer and motion events disabled, nothing left mid-read; none opens until `resumed`. The
    /// future succeeds once all are closed. The clients' watches stay.
    package func prepareForSleep() -> EventLoopFuture<Void> {
        eventLoop.preconditionInEventLoop()
        guard !stopped, !captures.asleep else { return captures.sleep() }
        recoveries.sleeping()
        sleepNumber += 1
        closedForSleep = Set(captures.runningOrStopping)
        saver.saveNow(pipeline.fusion.fusion, pipeline.gait)
        logger.notice("the machine goes to sleep: state saved, sensors closed", metadata: ["sensors": "\(closedForSleep.count)"])
        // The monotonic clock stops while the machine sleeps: a minute of it asleep is a minute awake
        // without the resume logind should have said (a message lost, a logind replaced mid-sleep).
        let sleep = sleepNumber
        eventLoop.scheduleTask(in: Self.longestSleepAwake) { [weak self] in
            guard let self, sleepNumber == sleep, captures.asleep else { return }
            logger.warning("no resume came a minute after the machine was to sleep: sensors re-armed")
            resumed()
        }
        return captures.sleep()
    }

    /// The machine resumed (logind's `PrepareForSleep(false)`): the captures the watches need are
    /// opened again as at start, every attribute written afresh (a driver may have forgotten its
    /// chip's state), and the device observers are told the devices again, so that the front ends
    /// publish them anew. Streams resume without a new `WATCH`; the fusion sees the sleep as a gap.
    package func resumed() {
        eventLoop.preconditionInEventLoop()
        guard !stopped, captures.asleep else { return }
        logger.notice("the machine resumed: sensors re-armed", metadata: ["sensors": "\(closedForSleep.count)"])
        rearmAfterSleep(closedForSleep)
        closedForSleep = []
        roster.changed()
    }

    /// How long the hub stays asleep while the machine is awake (monotonic time), waiting for a resume.
    static let longestSleepAwake = TimeAmount.seconds(60)

    private func rearmAfterSleep(_ devices: Set<DeviceNumber>) {
        for device in devices { recoveries.count(.resume, of: device) }
        recoveries.woke()
        captures.wake()
    }

    /// Stops every capture and saves the calibration (at shutdown; `offLoop` is then waited for, off
    /// the loop, for the captures to stop).
    package func stopAll() {
        eventLoop.preconditionInEventLoop()
        stopped = true
        memory.stop()
        polls.stop()
        saver.saveNow(pipeline.fusion.fusion, pipeline.gait)
        captures.stopAll()
    }
}
