import Logging
import MotionCore
import MotionDevices
import MotionFusion
import MotionSystem
import MotionWire
import NIOCore

/// The coordinator: takes the clients' requests and the devices' comings and goings, and keeps the
/// captures (`CaptureManager`) exactly what the watches (`StreamFanout`) and polls (`PollBroker`)
/// need; samples go through the `MotionPipeline` to the clients' outboxes (`ClientTable`).
/// Confined to one event loop: every entry point checks it runs there (capture threads hop to it).
package final class Hub: @unchecked Sendable {
    // @unchecked: all state is touched on `eventLoop` only.
    package typealias ClientID = ClientOutbox.ID

    package let eventLoop: any EventLoop
    package let logger: Logger
    let release: String
    /// Uptime runs on the monotonic clock: setting the wall clock changes it not.
    private let startTime = NIODeadline.now()
    private let clients: ClientTable
    private let fanout: StreamFanout
    private let polls: PollBroker
    private let captures: CaptureManager
    private let pipeline: MotionPipeline
    private let calibration: SavedState<SensorFusion.Calibration>
    private let history: SavedState<GaitHistory.Saved>
    /// `pipeline.gait.historyRevision` when the history was last saved.
    private var historySavedRevision = 0
    /// The blocking jobs handed to the thread pool (captures stopping, the state being saved), for
    /// shutdown to wait for after `stopAll`.
    let offLoop: OffLoopWork
    /// How long the sensors must run as planned (or none run) before the code that started, stopped
    /// or served what ran before is paged out (`ResidentMemory`): start-up, a client's coming and
    /// going; the steady state's own code faults back in within its first samples.
    static let pageOutDelay = TimeAmount.seconds(5)
    /// The heap's trim due after clients that held many bytes left.
    private var heapRelease: Scheduled<Void>?
    /// The page-out due once the plan has held for `pageOutDelay`.
    private var pageOut: Scheduled<Void>?
    /// How often the calibration and the step history are saved while sensors run (`savesState`).
    private var stateSaveInterval: TimeAmount?
    /// The periodic save, while sensors run: none at rest, so that a daemon nobody uses never wakes.
    private var periodicSave: RepeatedTask?
    /// The capture plan followed last: the page-out waits for the sensors to settle, not for requests
    /// to stop coming (a POLL replans without changing what runs).
    private var followedPlan: CapturePlan?
    /// Every origin's devices: this machine's, then each remote's.
    package private(set) var devices: [DeviceDescriptor] = []
    /// The last listing of each origin.
    private var listedDevices: [DeviceOrigin: [DeviceDescriptor]] = [:]
    /// What `devices` cannot give, for STATUS (worked out when they change, not per request).
    private var unavailable: StatusReply.Unavailable?
    /// Set by `stopAll`: nothing opens a sensor again (a stop finishing off the loop, or a client
    /// still connected, would otherwise replan during shutdown).
    private var stopped = false
    /// Errors since start, by kind, for metrics.
    private(set) var errorCounts = [Int](repeating: 0, count: DaemonError.allCases.count)
    /// What the last listing of each origin skipped and why, as logged.
    private var reportedProblems: [DeviceOrigin: Set<String>] = [:]
    /// Told of every change of `devices` (the bridges: D-Bus's `Has…` properties, streams waiting for a sensor).
    private var deviceObservers: [([DeviceDescriptor]) -> Void] = []
    /// The live settings as configured; `place`, where a location service says the machine is,
    /// stands in for a `location` they do not give.
    private var settings = LiveSettings.defaults
    private var place: GeographicLocation?
    /// Whether a place is needed (`followLocationNeed`), and who is told when that changes.
    private var needsLocation = false
    private var locationNeedObserver: ((Bool) -> Void)?

    /// Where the sensors come from.
    package var source: any SensorSource { captures.source }
    /// Connections served at once; more are told so and closed.
    package var maximumClients: Int { clients.maximumClients }

    /// Whether the process's code pages are given back once the sensors settle (`pageOutDelay`): the
    /// daemon's, whose executable no other process maps; not a process that hosts hubs among other work.
    private let pagesOut: Bool

    package init(
        eventLoop: any EventLoop, logger: Logger, release: String, store: StateStore?, source: any SensorSource, maximumClients: Int = 1000,
        pagesOutWhenSettled: Bool = false
    ) {
        self.eventLoop = eventLoop
        pagesOut = pagesOutWhenSettled
        self.logger = logger
        self.release = release
        clients = ClientTable(maximumClients: maximumClients, eventLoop: eventLoop, logger: logger)
        fanout = StreamFanout(clients: clients)
        polls = PollBroker(clients: clients, eventLoop: eventLoop)
        offLoop = OffLoopWork(eventLoop: eventLoop)
        captures = CaptureManager(source: source, eventLoop: eventLoop, offLoop: offLoop, logger: logger)
        calibration = SavedState("calibration", store: store, offLoop: offLoop, logger: logger)
        history = SavedState(
            "step history", store: store.map { StateStore(directory: $0.directory, name: "history.json", files: $0.files) }, offLoop: offLoop,
            logger: logger)
        pipeline = MotionPipeline(
            fanout: fanout, calibration: calibration, history: GaitHistory(saved: history.value, now: Syscall.realtimeNanoseconds()))
        polls.demandsChanged = { [unowned self] in replan() }
        captures.changed = { [unowned self] in replan() }
        captures.received = { [unowned self] events, device in received(events, from: device) }
        // The uncertainty grows in motion (the vertical bias is not observable then) and falls at each
        // rest, so the state flips with ordinary use: the first calibration is a notice, the flips
        // after it are for debugging.
        var announced = false
        pipeline.fusion.gyroscopeCalibrationChanged = { calibrated, sigma in
            let metadata: Logger.Metadata = ["bias uncertainty": "±\((sigma * 180 / .pi * 1000).rounded() / 1000) °/s"]
            if calibrated && !announced {
                announced = true
                logger.notice("gyroscope calibrated", metadata: metadata)
            } else if calibrated {
                logger.debug("gyroscope calibrated again", metadata: metadata)
            } else if !announced {
                logger.info("gyroscope calibration learning: hold the device still for a few seconds", metadata: metadata)
            } else {
                logger.debug("gyroscope bias uncertain again after motion", metadata: metadata)
            }
        }
        pipeline.fusion.axesChecked = { [unowned self] sensor, verdict in
            let (reference, turning) = sensor == .gyroscope ? ("accelerometer", "attitude") : ("gyroscope", "heading")
            guard case .disagree(let mending) = verdict else { return logger.info("the \(sensor)'s axes agree with the \(reference)'s") }
            let metadata = remedy(mending, for: sensor)
            logger.warning("the \(sensor)'s axes disagree with the \(reference)'s: the \(turning) turns the wrong way", metadata: metadata)
        }
        pipeline.sampleFused = { [unowned self] in
            if polls.answerReady(pipeline.snapshot(for:)) { replan() }
        }
    }

    /// Applies the settings that can change while running (a configuration reload).
    package func apply(_ settings: LiveSettings) {
        eventLoop.preconditionInEventLoop()
        self.settings = settings
        pipeline.fusion.declinationSetting = (settings.declination, settings.location ?? place)
        pipeline.gait.seaLevelPressure = settings.seaLevelPressure
        pipeline.gait.stepLength = settings.stepLength
        followLocationNeed()
    }

    /// Tells `observer` (nil: nobody) whether the hub needs to know where the machine is, now and at
    /// each change: while a client watches motion in `xTrueNorthZVertical` and the settings give
    /// neither a declination nor a location.
    package func observeLocationNeed(_ observer: ((Bool) -> Void)?) {
        eventLoop.preconditionInEventLoop()
        locationNeedObserver = observer
        observer?(needsLocation)
    }

    /// Where a location service says the machine is: the World Magnetic Model's declination there turns
    /// `xTrueNorthZVertical`, unless the settings give a location or a declination.
    package func updateLocation(_ place: GeographicLocation) {
        eventLoop.preconditionInEventLoop()
        self.place = place
        if settings.location == nil { pipeline.fusion.declinationSetting = (settings.declination, place) }
    }

    private func followLocationNeed() {
        let needs = settings.declination == nil && settings.location == nil && fanout.watchesMotion(in: .xTrueNorthZVertical)
        guard needs != needsLocation else { return }
        needsLocation = needs
        locationNeedObserver?(needs)
    }

    /// Saves the calibration and the step history every `interval` while sensors run, and once when
    /// they stop; nothing runs at rest (what is learnt is learnt only while they run).
    package func savesState(every interval: TimeAmount) {
        eventLoop.preconditionInEventLoop()
        stateSaveInterval = interval
        replan()
    }

    /// Starts or ends the periodic save as sensors that learn (a fusion, the steps) start or stop.
    private func followSaving(_ plan: CapturePlan) {
        guard let interval = stateSaveInterval else { return }
        // An accelerometer that rests when still serves only event streams: nothing it feeds learns
        // (no fusion, no steps), so a save would only be a wake-up a minute of a screen at rest.
        let learns = plan.captures.contains { !$0.restsWhenStill }
        if learns, periodicSave == nil {
            periodicSave = eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { [unowned self] _ in saveState() }
        } else if !learns, let running = periodicSave {
            running.cancel()
            periodicSave = nil
            saveState()
        }
    }

    /// Whether the step history changed since it was given to be saved, or its last save did not reach
    /// the disk (failed, or skipped behind another).
    private var historyNeedsSaving: Bool { pipeline.gait.historyRevision != historySavedRevision || !history.isSaved }

    /// Saves the calibration, and the step history if it changed, in the background; the place's
    /// magnetic field is computed again once a month has passed.
    package func saveState() {
        eventLoop.preconditionInEventLoop()
        pipeline.fusion.refreshGeomagneticField()
        var wrote = false
        if let fusion = pipeline.fusion.fusion { wrote = calibration.save(fusion.calibration) }
        if historyNeedsSaving {
            historySavedRevision = pipeline.gait.historyRevision
            wrote = history.save(pipeline.gait.history.saved) || wrote
        }
        // The encoder's code a write brought back (3 MB of a screen-rotation daemon's 14.7) goes out
        // again once it is done, as at start-up.
        if wrote, pagesOut { pageOutOnceSettled() }
    }

    // MARK: Devices

    /// Calls `observer` at every change of `devices`, on the loop.
    package func observeDevices(_ observer: @escaping ([DeviceDescriptor]) -> Void) {
        eventLoop.preconditionInEventLoop()
        deviceObservers.append(observer)
    }

    private func devicesChanged() {
        for observer in deviceObservers { observer(devices) }
    }

    /// Takes a listing of `origin`'s devices (at start, when udev reports a change, and every so often
    /// for another machine's), made off the loop: listing blocks (libudev, libiio reading all of IIO's
    /// sysfs, or a board's iiod). It replaces that origin's devices only. A running sensor whose device
    /// went away ends its streams with `ENDED`; one that appeared can be watched at once.
    package func apply(_ listing: Result<DeviceListing, any Error>, from origin: DeviceOrigin = .thisMachine) {
        eventLoop.preconditionInEventLoop()
        switch listing {
        case .success(let listing):
            listedDevices[origin] = listing.devices
            devices = listedDevices.sorted { $0.key < $1.key }.flatMap(\.value)
            // Said once while it lasts: an unreachable board is listed again every 10 s, and a
            // machine's odd device at every udev event.
            let problems = listing.problems.map { "\($0)" }
            for problem in problems where reportedProblems[origin]?.contains(problem) != true {
                logger.warning("device skipped", metadata: ["reason": "\(problem)"])
            }
            reportedProblems[origin] = Set(problems)
        case .failure(let error):
            // The devices known stay: each capture notices by itself when its device goes away, and
            // the next udev event lists them again.
            errorCounts[DaemonError.discoveryFailed.index] += 1
            logger.error("device discovery failed; the devices known stay", metadata: ["error": "\(error)", "devices": "\(devices.count)"])
            return
        }
        unavailable = CapturePlan.unavailable(on: devices)
        pipeline.events.vendorUnitLight = Set(devices.filter { $0.sensors.contains { $0.kind == .light && $0.readsVendorUnits == true } }.map(\.number))
        for gone in captures.stop(absentFrom: Set(devices.map(\.number))) {
            logger.notice("sensor removed", metadata: ["device": "\(gone.device)"])
            endStreams(fedBy: gone.device, reason: "\(gone.device) was removed")
        }
        replan()
        devicesChanged()
    }

    // MARK: Clients

    /// Registers a new connection; `nil` when `maximumClients` are connected already.
    ///
    /// Registering does not write: the caller stores the id first and then `greet`s, because a write
    /// can fail at once (the peer already gone) and close the connection, whose `disconnect` must
    /// find the id.
    package func connect(_ sink: any ClientSink) -> ClientID? {
        eventLoop.preconditionInEventLoop()
        return clients.add(sink)
    }

    /// Registers an in-process front end, which takes every message as a value (`MessageSink`); `nil`
    /// when `maximumClients` are connected already.
    package func connect(_ receiver: any MessageSink) -> ClientID? {
        eventLoop.preconditionInEventLoop()
        return clients.add(receiver)
    }

    /// Sends the `VERSION` greeting.
    package func greet(_ id: ClientID) {
        eventLoop.preconditionInEventLoop()
        clients.send(Version(release: release), to: id)
    }

    /// The client will send nothing more (it shut down its writing side, as `socat` does at the end of
    /// its input): it gets the answers still owed to it, then the connection is closed.
    package func inputClosed(_ id: ClientID) {
        eventLoop.preconditionInEventLoop()
        guard let outbox = clients[id] else { return }
        outbox.closesWhenAnswered = true
        clients.flush(id)
    }

    package func disconnect(_ id: ClientID) {
        eventLoop.preconditionInEventLoop()
        guard let outbox = clients.remove(id) else { return }
        if outbox.heldManyBytes { releaseFreeHeapSoon() }
        if outbox.waitingPolls > 0 { polls.removeAll(of: id) }
        if fanout.removeAll(of: id) { replan() }
    }

    /// Whether requests from `id` are still served (it is connected and not being disconnected).
    package func serves(_ id: ClientID) -> Bool { clients.serves(id) }

    /// Whether `id`'s next request may be served now: it is served, and its replies do not fill its
    /// queue (in lines or bytes). A front end holds the rest of a read until the queue drains and
    /// the client's `setReading(true)` says so, so that what one client asks is bounded by what it reads.
    package func acceptsRequests(_ id: ClientID) -> Bool { clients.acceptsRequests(id) }

    /// Runs `body` with every client's writes held until it ends (see `ClientTable.batch`).
    package func batch(_ body: () -> Void) {
        eventLoop.preconditionInEventLoop()
        clients.batch(body)
    }

    /// Sends a reply in request order.
    package func reply<M: ServerMessage>(_ message: M, to id: ClientID) {
        if M.self == ErrorReply.self { errorCounts[DaemonError.requestRefused.index] += 1 }
        clients.reply(message, to: id)
    }

    /// Writes what the client's connection takes now.
    package func flush(_ id: ClientID) {
        eventLoop.preconditionInEventLoop()
        clients.flush(id)
    }

    /// Stops reading a client's requests while it reads its replies too slowly.
    package func pauseReadingIfCongested(_ id: ClientID) {
        eventLoop.preconditionInEventLoop()
        clients.pauseReadingIfCongested(id)
    }

    package func handle(_ request: Request, from id: ClientID) {
        eventLoop.preconditionInEventLoop()
        guard serves(id) else { return }
        switch request {
        case .watch(let watch): handleWatch(watch, from: id)
        case .poll(let poll): handlePoll(poll, from: id)
        case .devices(let requestID): reply(Replies.devices(id: requestID, devices: devices, source: source), to: id)
        case .status(let requestID):
            let uptime = Double((NIODeadline.now() - startTime).nanoseconds) / 1e9
            reply(Replies.status(
                id: requestID, uptime: uptime, clients: clients.count, captures: captures.running.values, dropped: clients.totalDropped,
                fusion: pipeline.fusion.fusion, saved: calibration.value, unavailable: unavailable,
                gyroscopeAxes: pipeline.fusion.gyroscopeAxes, magnetometerAxes: pipeline.fusion.magnetometerAxes,
                geomagnetic: pipeline.fusion.geomagneticField.map {
                    .init($0, applied: settings.declination == nil, source: settings.location != nil ? .configuration : .geoclue)
                }), to: id)
        case .history(let query):
            reply(Replies.history(query, of: pipeline.gait.history, stepLength: pipeline.gait.stepLength, now: Syscall.realtimeNanoseconds()), to: id)
        }
    }

    private func handleWatch(_ watch: Request.Watch, from id: ClientID) {
        let streams = watch.streams ?? Array(fanout.watches(of: id).keys)
        let interval = watch.interval ?? Request.Watch.defaultInterval
        if watch.enable == false {
            for stream in streams { fanout.setWatch(nil, of: stream, for: id) }
        } else {
            let latency = watch.latency ?? 0
            let plan = CapturePlan(demands: streams.map { .init(stream: $0, interval: interval, latency: latency) }, devices: devices)
            guard plan.unavailable.isEmpty else {
                let reasons = CapturePlan.reasons(for: plan.unavailable, devices: devices)
                return reply(ErrorReply(id: watch.id, code: .unavailable, message: reasons), to: id)
            }
            for stream in streams {
                let watch = StreamFanout.Watch(
                    interval: interval, frame: watch.frame ?? .xArbitraryZVertical, latency: latency, decimator: StreamDecimator(interval: interval))
                fanout.setWatch(watch, of: stream, for: id)
            }
        }
        let watching = fanout.watches(of: id).sorted { $0.key.rawValue < $1.key.rawValue }.map { stream, w in
            stream.isEventStream
                ? Watching.Stream(stream: stream)
                : Watching.Stream(stream: stream, interval: w.interval, frame: stream == .motion ? w.frame : nil, latency: w.latency > 0 ? w.latency : nil)
        }
        reply(Watching(id: watch.id, streams: watching), to: id)
        replan()
        // Event streams start with their state.
        guard watch.enable != false else { return }
        for stream in streams where stream.startsWithState {
            if let current = pipeline.latest(stream)?.message { clients.send(current, to: id) }
        }
    }

    private func handlePoll(_ poll: Request.Poll, from id: ClientID) {
        let plan = CapturePlan(demands: poll.streams.map { .init(stream: $0, interval: Request.Watch.defaultInterval) }, devices: devices)
        guard plan.unavailable.isEmpty else {
            return reply(ErrorReply(id: poll.id, code: .unavailable, message: CapturePlan.reasons(for: plan.unavailable, devices: devices)), to: id)
        }
        polls.polled(poll.streams)
        if let snapshot = pipeline.snapshot(for: poll) { return reply(snapshot, to: id) }
        // The sensors were not running (or have given nothing yet): run them until the first sample.
        polls.wait(poll, from: id)
    }

    // MARK: Captures

    /// Opens, closes and re-opens captures so that exactly what is watched (or polled) runs.
    private func replan() {
        guard !stopped else { return }
        let demands = fanout.demands + polls.demands()
        let plan = CapturePlan(demands: demands, devices: devices)
        captures.follow(plan, on: devices)
        pipeline.follow(plan, motionNeeded: demands.contains { $0.stream == .motion }, deviceRate: captures.rate(of:))
        followSaving(plan)
        followLocationNeed()
        if pagesOut, plan != followedPlan { pageOutOnceSettled() }
        followedPlan = plan
    }

    /// Gives the heap's free memory back a second after the last client that held many bytes left
    /// (40 that left together cost one trim), off the loop: glibc otherwise keeps it resident.
    private func releaseFreeHeapSoon() {
        heapRelease?.cancel()
        heapRelease = eventLoop.scheduleTask(in: .seconds(1)) { [self] in
            heapRelease = nil
            guard !stopped else { return }
            offLoop.run({ ResidentMemory.releaseFreeHeap() }, then: { _ in })
        }
    }

    /// (Re)schedules the page-out for `pageOutDelay` from now.
    private func pageOutOnceSettled() {
        pageOut?.cancel()
        pageOut = eventLoop.scheduleTask(in: Self.pageOutDelay) { [self] in
            pageOut = nil
            guard !stopped else { return }
            offLoop.run({ ResidentMemory.releaseFilePages() }, then: { [self] result in
                if case .success(.failure(let error)) = result {
                    logger.info("code pages stay resident", metadata: ["error": "\(error)"])
                }
            })
        }
    }

    /// Ingests one read's events from a capture, with one write per client for the whole burst:
    /// when the loop falls behind, bursts grow and the system calls per line shrink, instead of the
    /// backlog growing.
    private func received(_ events: [SensorEvent], from number: DeviceNumber) {
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
        case .ended(let error):
            errorCounts[DaemonError.sensorEnded.index] += 1
            logger.warning("sensor ended", metadata: ["device": "\(number)", "reason": "\(error)"])
            guard captures.ended(number) != nil else { return }
            endStreams(fedBy: number, reason: error.meansDeviceGone ? "\(number) was removed" : "\(error)")
            if error.meansDeviceGone { devices.removeAll { $0.number == number } }
            replan()
            if error.meansDeviceGone { devicesChanged() }
        }
    }

    /// Ends the streams that `device`'s capture fed in the plan it ran in (the one followed last).
    private func endStreams(fedBy device: DeviceNumber, reason: String) {
        guard let plan = followedPlan else { return }
        fanout.endStreams(fedBy: device, in: plan, reason: reason)
    }

    /// What mends a gyroscope or magnetometer whose readings `mending` puts right (in motiond's
    /// frame): the mount matrix for motiond.conf's `mount_matrices`, in Linux userspace's frame as the
    /// file takes it (docs/frames.md: motiond's frame is that one turned half a turn about z).
    func remedy(_ mending: Matrix3, for kind: SensorKind) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["multiply its readings by": "\(mending.rowMajor.map { Int($0) })"]
        if let device = devices.first(where: { $0.sensor(kind) != nil }), let sensor = device.sensor(kind) {
            metadata["device"] = "\(device.number)"
            if let other = [SensorKind.accelerometer, .gyroscope].first(where: { $0 != kind && device.sensor($0) != nil }) {
                // One chip, one matrix: a mount matrix there would turn the other sensor too.
                metadata["remedy"] = "the \(kind) shares \(device.number) with the \(other): its driver maps them differently; report it upstream"
            } else if let matrix = DeviceFrame.mountMatrixSetting(mending: mending, frameMatrix: sensor.deviceFrameMatrix) {
                metadata["motiond.conf"] = "mount_matrices: [{name: \(device.name), matrix: \"\(matrix)\"}]"
            } else {
                metadata["remedy"] = "a mirror image (its driver inverts an axis), which no mount matrix mends: report it upstream"
            }
        }
        return metadata
    }

    /// What the metrics report, now.
    package func metrics() -> MetricsSnapshot {
        eventLoop.preconditionInEventLoop()
        var errors = errorCounts
        errors[DaemonError.clientDisconnected.index] = clients.disconnectedByForce
        return MetricsSnapshot(
            uptime: Double((NIODeadline.now() - startTime).nanoseconds) / 1e9,
            clients: clients.count,
            samplesRead: Dictionary(uniqueKeysWithValues: zip(SensorKind.allCases, captures.samplesRead)),
            sensors: captures.running.values.map {
                .init(device: $0.plan.device.sysname, rate: $0.capture.rate, measuredRate: $0.measuredRate, rest: $0.capture.restMode?.mode)
            },
            droppedByClient: Dictionary(uniqueKeysWithValues: clients.outboxes.map { ($0.key, $0.value.queue.totalDropped) }),
            dropped: clients.totalDropped,
            magneticFieldAccuracy: pipeline.fusion.fusion?.calibrator.accuracy,
            gyroscopeBias: pipeline.fusion.fusion?.filter.gyroscopeBias ?? calibration.value?.gyroscopeBias,
            gyroscopeBiasUncertainty: pipeline.fusion.fusion.flatMap { $0.usesGyroscope ? $0.filter.gyroscopeBiasSigma : nil }
                ?? calibration.value?.gyroscopeBiasSigma,
            errors: Dictionary(uniqueKeysWithValues: zip(DaemonError.allCases, errors)),
            steps: pipeline.gait.pedometer.steps, activity: pipeline.gait.activity?.activity, altitude: pipeline.gait.altitude)
    }

    /// Stops every capture and saves the calibration (at shutdown; `offLoop` is then waited for, off
    /// the loop, for the captures to stop).
    package func stopAll() {
        eventLoop.preconditionInEventLoop()
        stopped = true
        periodicSave?.cancel()
        pageOut?.cancel()
        heapRelease?.cancel()
        polls.stop()
        calibration.saveNow(pipeline.fusion.fusion?.calibration)
        if historyNeedsSaving { history.saveNow(pipeline.gait.history.saved) }
        captures.stopAll()
    }
}
