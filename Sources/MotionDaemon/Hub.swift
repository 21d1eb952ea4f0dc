import Foundation
import Logging
import MotionCore
import MotionDevices
import MotionFusion
import MotionWire
import NIOCore
import NIOPosix

/// The sensor hub: clients, their watches, the captures that serve them, the fusion core and the
/// latest values. Confined to one event loop: every method runs there (capture threads hop to it).
final class Hub: @unchecked Sendable {
    // @unchecked: all state is touched on `eventLoop` only.
    typealias ClientID = Int

    private struct Watch {
        var interval: Double
        var frame: AttitudeReferenceFrame
        var decimator: StreamDecimator
    }

    /// A class, not a struct: the hot path mutates its queue in place, and a struct in a dictionary
    /// gets copied (and its queue's storage with it) by the lookups around a mutation.
    private final class Client {
        let channel: any Channel
        var queue = DeliveryQueue<ByteBuffer>(capacity: Hub.queueCapacity)
        var watches: [StreamKind: Watch] = [:]
        /// Since when its queue has been full of lines that may not be dropped.
        var fullSince: NIODeadline?
        /// Whether reading its requests is paused until its queue drains.
        var paused = false
        /// Whether it is in `awaitingFlush`.
        var awaitsFlush = false
        /// Whether its input has ended: it is closed once all it asked for is answered.
        var closesWhenAnswered = false
        /// Whether the close after its last answer is under way.
        var closing = false
        /// Replies held back behind a POLL that waits for its sensors, so that replies keep the order
        /// of the requests: each a slot number and its line once there is one (`nil`: still waiting).
        var replySlots: [(slot: Int, line: ByteBuffer?)] = []
        var nextSlot = 0
        /// Its POLLs in `pendingPolls`.
        var waitingPolls = 0
        let id: ClientID

        init(id: ClientID, channel: any Channel) {
            self.id = id
            self.channel = channel
        }
    }

    private struct PendingPoll {
        var client: ClientID
        var poll: Request.Poll
        /// Its place among the client's replies (`Client.replySlots`).
        var slot: Int
        var timeout: Scheduled<Void>
    }

    private struct RunningCapture {
        var plan: CapturePlan.Capture
        var capture: any SensorStream
        var samples = 0
        var firstTimestamp: Int64?
        var lastTimestamp: Int64?
        /// The last timestamp per kind, to measure each sensor's real sample interval.
        var lastByKind: [SensorKind: Int64] = [:]
        /// When a lower rate that clients now ask for will be applied (the sensor runs faster until then).
        var lowerRateAfter: NIODeadline?

        /// The interval since the previous sample of the same kind, ns (the planned period for the first).
        mutating func period(of sample: SensorSample) -> Int64 {
            let planned = Int64(1e9 / plan.rate)
            defer { lastByKind[sample.kind] = sample.timestamp }
            guard let last = lastByKind[sample.kind], sample.timestamp > last else { return planned }
            return min(sample.timestamp - last, 4 * planned)
        }
    }

    /// Lines a client's queue holds before stream messages are dropped.
    static let queueCapacity = 256
    /// Connections served at once; more are told so and closed.
    let maximumClients: Int
    /// How long a sensor keeps its rate after clients ask for a lower one.
    static let rateSettling = TimeAmount.seconds(1)
    /// POLLs one client may have waiting for their sensors at once.
    static let maximumWaitingPolls = 32
    /// How long a POLL waits for the first sample, s.
    static let pollTimeout = 2.0
    /// How long sensors started for a POLL keep running after the last poll that needs them, s.
    static let pollLinger = 5.0
    /// How long a client may leave its queue full of replies and events before it is disconnected.
    static let stuckClientTimeout = TimeAmount.seconds(10)

    let eventLoop: any EventLoop
    let logger: Logger
    let release: String
    /// Uptime and timeouts run on the monotonic clock: setting the wall clock changes none of them.
    private let startTime = NIODeadline.now()
    private var nextClient = 0
    private var clients: [ClientID: Client] = [:]
    /// POLLs waiting for their sensors' first sample, by their number.
    private var pendingPolls: [Int: PendingPoll] = [:]
    private var nextPoll = 0
    /// Streams polled lately, and until when their sensors keep running.
    private var recentPolls: [StreamKind: NIODeadline] = [:]
    private var lingerEnd: Scheduled<Void>?
    private(set) var devices: [DeviceDescriptor] = []
    /// What `devices` cannot give, for STATUS (worked out when they change, not per request).
    private var unavailable: StatusReply.Unavailable?
    private var captures: [DeviceNumber: RunningCapture] = [:]
    private var fusion: SensorFusion?
    private var orientation = OrientationDetector()
    private var tilt = TiltDetector()
    private var hinge: HingeEstimator?
    /// The base's accelerometer while the hinge is watched: its samples feed only the hinge.
    private var baseAccelerometer: DeviceNumber?
    private var droppedByGoneClients = 0
    private var latest = Snapshot(id: nil)
    /// Scratch space for `drain`, reused.
    private var drained: [SensorEvent] = []
    /// The samples of all captures in one time order.
    private var merger = SampleMerger()
    /// Samples the merger let through, reused.
    private var merged: [SampleMerger.Entry] = []
    /// Whether `ingestMerged` is running (it is not entered twice).
    private var ingestingMerged = false
    /// Whether a burst of samples is being ingested: writes wait for its end.
    private var draining = false
    /// Clients with lines queued during the burst.
    private var awaitingFlush: [ClientID] = []
    /// The gyroscope sample (timestamp, period, ns) whose motion is still to be sent.
    private var pendingMotion: (timestamp: Int64, period: Int64)?
    /// Writes per-sample lines, its buffer reused.
    private var lineWriter = LineWriter()
    private let store: StateStore?
    /// Magnetic declination, degrees east of true north.
    private var declination = 0.0
    private var savedCalibration: SensorFusion.Calibration?
    private var saving = false

    /// Where the sensors come from.
    let source: any SensorSource

    init(eventLoop: any EventLoop, logger: Logger, release: String, store: StateStore?, source: any SensorSource, maximumClients: Int = 1000) {
        self.source = source
        self.maximumClients = maximumClients
        self.eventLoop = eventLoop
        self.logger = logger
        self.release = release
        self.store = store
        do {
            savedCalibration = try store?.load(SensorFusion.Calibration.self)
            if savedCalibration != nil { logger.info("calibration restored", metadata: ["file": "\(store!.path)"]) }
        } catch {
            logger.error("saved state unreadable, starting afresh", metadata: ["file": "\(store!.path)", "error": "\(error)"])
        }
    }

    /// Sets the magnetic declination, degrees east of true north (a configuration reload).
    func setDeclination(_ degrees: Double) {
        eventLoop.preconditionInEventLoop()
        declination = degrees
        fusion?.declination = degrees * .pi / 180
    }

    // MARK: State

    /// Saves the calibration in the background (file writes and fsync stay off the event loop).
    func saveState() {
        eventLoop.preconditionInEventLoop()
        guard let store, let fusion, !saving else { return }
        let calibration = fusion.calibration
        savedCalibration = calibration
        saving = true
        // Off the loop, on NIO's thread pool: no libdispatch worker pool (with its monitor thread) for
        // one write a minute.
        NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) { try store.save(calibration) }.whenComplete { [self] result in
            saving = false
            if case .failure(let error) = result { logger.error("cannot save state", metadata: ["error": "\(error)"]) }
        }
    }

    /// Saves the calibration now, waiting for the disk (at shutdown).
    func saveStateNow() {
        // The fusion is dropped while nobody wants motion; what it learnt is in `savedCalibration`.
        guard let store, let calibration = fusion?.calibration ?? savedCalibration else { return }
        do {
            try store.save(calibration)
        } catch {
            logger.error("cannot save state", metadata: ["error": "\(error)"])
        }
    }

    // MARK: Devices

    /// Re-reads the device list (at start, and when udev reports a change). A running sensor whose
    /// device went away ends its streams with `ENDED`; one that appeared can be watched at once.
    /// Lists the devices. It blocks (libudev, and libiio reading all of IIO's sysfs), so it is called
    /// off the event loop, and the result handed to `apply(_:)` on it.
    static func listDevices(from source: any SensorSource) -> Result<DeviceListing, any Error> {
        Result { try source.listDevices() }
    }

    /// Takes a device listing: captures of devices gone end, and what is watched is planned anew.
    func apply(_ listing: Result<DeviceListing, any Error>) {
        eventLoop.preconditionInEventLoop()
        switch listing {
        case .success(let listing):
            devices = listing.devices
            for problem in listing.problems { logger.warning("device skipped", metadata: ["reason": "\(problem)"]) }
        case .failure(let error):
            logger.error("device discovery failed", metadata: ["error": "\(error)"])
            devices = []
        }
        unavailable = CapturePlan.unavailable(on: devices)
        let present = Set(devices.map(\.number))
        for (number, running) in captures where !present.contains(number) {
            running.capture.stop()
            captures[number] = nil
            logger.notice("sensor removed", metadata: ["device": "\(number)"])
            endStreams(needing: running.plan.kinds, reason: "\(number) was removed")
        }
        replan()
    }

    // MARK: Clients

    /// Registers a new connection; `nil` when `maximumClients` are connected already.
    ///
    /// Registering does not write: the caller stores the id first and then `greet`s, because a write
    /// can fail at once (the peer already gone) and close the channel, whose `disconnect` must find
    /// the id.
    func connect(channel: any Channel) -> ClientID? {
        eventLoop.preconditionInEventLoop()
        guard clients.count < maximumClients else { return nil }
        nextClient += 1
        clients[nextClient] = Client(id: nextClient, channel: channel)
        return nextClient
    }

    /// Sends the `VERSION` greeting.
    func greet(_ id: ClientID) {
        eventLoop.preconditionInEventLoop()
        send(Version(release: release), to: id, kind: .kept)
    }

    /// The client will send nothing more (it shut down its writing side, as `socat` does at the end of
    /// its input): it gets the answers still owed to it, then the connection is closed.
    func inputClosed(_ id: ClientID) {
        eventLoop.preconditionInEventLoop()
        guard let client = clients[id] else { return }
        client.closesWhenAnswered = true
        closeIfAnswered(id)
    }

    private func closeIfAnswered(_ id: ClientID) {
        if let client = clients[id], client.closesWhenAnswered { flush(client) }
    }

    func disconnect(_ id: ClientID) {
        eventLoop.preconditionInEventLoop()
        guard let client = clients.removeValue(forKey: id) else { return }
        droppedByGoneClients += client.queue.totalDropped
        if client.waitingPolls > 0 {
            for (number, poll) in pendingPolls where poll.client == id {
                poll.timeout.cancel()
                pendingPolls[number] = nil
            }
        }
        if !client.watches.isEmpty { replan() }
    }

    /// Sends a reply, or holds it behind an earlier POLL still waiting for its sensors.
    func reply<M: ServerMessage>(_ message: M, to id: ClientID) {
        guard let client = clients[id], !client.closing else { return }
        guard !client.replySlots.isEmpty else {
            send(message, to: id, kind: .kept)
            return
        }
        guard let line = encode(message) else { return }
        client.replySlots.append((0, line))
    }

    /// A place for a reply that comes later; replies to later requests wait behind it.
    private func reserveReplySlot(for client: Client) -> Int {
        client.nextSlot += 1
        client.replySlots.append((client.nextSlot, nil))
        return client.nextSlot
    }

    /// Fills `slot` with the reply, then sends every reply at the front that is ready.
    private func answer<M: ServerMessage>(slot: Int, with message: M, to id: ClientID) {
        guard let client = clients[id], let index = client.replySlots.firstIndex(where: { $0.slot == slot }) else { return }
        if let line = encode(message) {
            client.replySlots[index].line = line
        } else {
            client.replySlots.remove(at: index)  // logged by `encode`; the replies behind it must not wait for ever
        }
        while let first = client.replySlots.first, let ready = first.line {
            client.replySlots.removeFirst()
            enqueue(ready, to: client, id: id, kind: .kept)
        }
    }

    private func encode<M: ServerMessage>(_ message: M) -> ByteBuffer? {
        do {
            return ByteBuffer(bytes: try Wire.encode(message))
        } catch {
            logger.error("cannot encode \(M.className)", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Whether requests from `id` are still served (it is connected and not being disconnected).
    func serves(_ id: ClientID) -> Bool {
        clients[id].map { !$0.closing } ?? false
    }

    func handle(_ request: Request, from id: ClientID) {
        eventLoop.preconditionInEventLoop()
        guard serves(id) else { return }
        switch request {
        case .watch(let watch): handleWatch(watch, from: id)
        case .poll(let poll): handlePoll(poll, from: id)
        case .devices(let requestID): reply(devicesReply(id: requestID), to: id)
        case .status(let requestID): reply(statusReply(id: requestID), to: id)
        }
    }

    private func handleWatch(_ watch: Request.Watch, from id: ClientID) {
        guard clients[id] != nil else { return }
        let streams = watch.streams ?? Array(clients[id]!.watches.keys)
        if watch.enable == false {
            for stream in streams { clients[id]!.watches[stream] = nil }
        } else {
            let plan = CapturePlan(demands: streams.map { .init(stream: $0, interval: watch.interval ?? Request.Watch.defaultInterval) }, devices: devices)
            if !plan.unavailable.isEmpty {
                let reasons = CapturePlan.reasons(for: plan.unavailable, devices: devices)
                reply(ErrorReply(id: watch.id, code: .unavailable, message: reasons), to: id)
                return
            }
            for stream in streams {
                let interval = watch.interval ?? Request.Watch.defaultInterval
                clients[id]!.watches[stream] = Watch(
                    interval: interval, frame: watch.frame ?? .xArbitraryZVertical, decimator: StreamDecimator(interval: interval))
            }
        }
        let watching = clients[id]!.watches.sorted { $0.key.rawValue < $1.key.rawValue }.map { stream, w in
            stream.isEventStream
                ? Watching.Stream(stream: stream)
                : Watching.Stream(stream: stream, interval: w.interval, frame: stream == .motion ? w.frame : nil)
        }
        reply(Watching(id: watch.id, streams: watching), to: id)
        replan()
        // Event streams start with the current state.
        if watch.enable != false {
            for stream in streams where stream.isEventStream { sendCurrentEvent(stream, to: id) }
        }
    }

    private func handlePoll(_ poll: Request.Poll, from id: ClientID) {
        let plan = CapturePlan(demands: poll.streams.map { .init(stream: $0, interval: Request.Watch.defaultInterval) }, devices: devices)
        if !plan.unavailable.isEmpty {
            reply(ErrorReply(id: poll.id, code: .unavailable, message: CapturePlan.reasons(for: plan.unavailable, devices: devices)), to: id)
            return
        }
        keepRunningAfterPoll(poll.streams)
        if let snapshot = snapshot(for: poll) {
            reply(snapshot, to: id)
            return
        }
        // The sensors were not running (or have given nothing yet): run them until the first sample.
        guard let client = clients[id] else { return }
        guard client.waitingPolls < Self.maximumWaitingPolls else {
            reply(ErrorReply(id: poll.id, code: .unavailable, message: "\(Self.maximumWaitingPolls) polls are waiting already; wait for their answers"), to: id)
            return
        }
        let slot = reserveReplySlot(for: client)
        nextPoll += 1
        let number = nextPoll
        let timeout = eventLoop.scheduleTask(in: .milliseconds(Int64(Self.pollTimeout * 1000))) { [self] in
            guard let pending = pendingPolls.removeValue(forKey: number) else { return }
            clients[id]?.waitingPolls -= 1
            answer(slot: slot, with: ErrorReply(id: pending.poll.id, code: .timeout, message: "no sample in \(Self.pollTimeout) s"), to: id)
            closeIfAnswered(id)
            replan()
        }
        pendingPolls[number] = PendingPoll(client: id, poll: poll, slot: slot, timeout: timeout)
        client.waitingPolls += 1
        replan()
    }

    /// Keeps the sensors of polled streams running for `pollLinger` after this poll.
    private func keepRunningAfterPoll(_ streams: [StreamKind]) {
        let end = NIODeadline.now() + .milliseconds(Int64(Self.pollLinger * 1000))
        for stream in streams { recentPolls[stream] = end }
        lingerEnd?.cancel()
        lingerEnd = eventLoop.scheduleTask(deadline: end) { [self] in
            lingerEnd = nil
            replan()
        }
    }

    /// The snapshot for a poll, if every stream asked for has a value from a running sensor.
    private func snapshot(for poll: Request.Poll) -> Snapshot? {
        var snapshot = Snapshot(id: poll.id)
        for stream in poll.streams {
            switch stream {
            case .motion:
                guard let fusion, latest.accelerometer != nil, !fusion.usesGyroscope || latest.gyroscope != nil else { return nil }
                snapshot.motion = motionMessage(fusion.deviceMotion(in: poll.frame ?? .xArbitraryZVertical))
            case .accelerometer:
                guard let value = latest.accelerometer else { return nil }
                snapshot.accelerometer = value
            case .gyroscope:
                guard let value = latest.gyroscope else { return nil }
                snapshot.gyroscope = value
            case .magnetometer:
                guard let value = latest.magnetometer else { return nil }
                snapshot.magnetometer = value
            case .proximity:
                guard let value = latest.proximity else { return nil }
                snapshot.proximity = value
            case .orientation:
                guard let value = latest.orientation else { return nil }
                snapshot.orientation = value
            case .tilt:
                guard let value = latest.tilt else { return nil }
                snapshot.tilt = value
            case .hinge:
                guard let value = latest.hinge else { return nil }
                snapshot.hinge = value
            }
        }
        return snapshot
    }

    // MARK: Captures

    /// Opens, closes and re-opens captures so that exactly what is watched (or polled) runs.
    private func replan() {
        var demands: [CapturePlan.Demand] = []
        for client in clients.values {
            for (stream, watch) in client.watches { demands.append(.init(stream: stream, interval: watch.interval)) }
        }
        // Waiting polls need nothing more: their streams are among `recentPolls` until after they time out.
        let now = NIODeadline.now()
        recentPolls = recentPolls.filter { $0.value > now }
        for stream in recentPolls.keys { demands.append(.init(stream: stream, interval: Request.Watch.defaultInterval)) }
        let plan = CapturePlan(demands: demands, devices: devices)
        baseAccelerometer = plan.baseAccelerometer
        let pace = plan.captures.first { $0.kinds.contains(.gyroscope) }?.device
            ?? plan.captures.first { $0.kinds.contains(.accelerometer) && $0.device != plan.baseAccelerometer }?.device
        if pace != merger.pace {
            merger.releaseAll(into: &merged)
            merger.pace = pace
            ingestMerged()
        }
        if let base = plan.baseAccelerometer, hinge == nil {
            hinge = HingeEstimator(rate: plan.captures.first { $0.device == base }?.rate ?? CapturePlan.eventRate)
        } else if plan.baseAccelerometer == nil {
            hinge = nil
        }
        let wanted = Dictionary(uniqueKeysWithValues: plan.captures.map { ($0.device, $0) })
        for (number, running) in captures where wanted[number] != running.plan {
            // A rate that drops is kept for `rateSettling`: a client switching back and forth between
            // two intervals would otherwise close and reopen the sensor each time, and every other
            // client's stream with it. Raising the rate, or another set of sensors, reopens at once.
            if let want = wanted[number], want.kinds == running.plan.kinds, want.rate < running.plan.rate {
                if running.lowerRateAfter == nil {
                    captures[number]!.lowerRateAfter = now + Self.rateSettling
                    eventLoop.scheduleTask(deadline: now + Self.rateSettling) { [self] in replan() }
                }
                if now < captures[number]!.lowerRateAfter! { continue }
            }
            running.capture.stop()
            captures[number] = nil
            logger.info("sensor closed", metadata: ["device": "\(number)"])
        }
        for (number, entry) in wanted where captures[number]?.plan == entry { captures[number]!.lowerRateAfter = nil }
        for (number, entry) in wanted where captures[number] == nil {
            guard let device = devices.first(where: { $0.number == number }) else { continue }
            do {
                let capture = try source.open(device, kinds: entry.kinds.sorted { $0.rawValue < $1.rawValue }, rate: entry.rate)
                captures[number] = RunningCapture(plan: entry, capture: capture)
                let mailbox = EventMailbox()
                capture.start { [weak self] event in
                    guard let self, mailbox.post(event) else { return }
                    self.eventLoop.execute { self.drain(mailbox, from: number) }
                }
                logger.info("sensor opened", metadata: [
                    "device": "\(number)", "kinds": "\(entry.kinds.map(\.rawValue).sorted())", "rate": "\(capture.rate)",
                    "mode": "\(capture.modeName)"])
            } catch {
                logger.error("cannot open sensor", metadata: ["device": "\(number)", "error": "\(error)"])
            }
        }
        if plan.captures.isEmpty { latest = Snapshot(id: nil) }
        let motionNeeded = demands.contains { $0.stream == .motion }
        let rate = { (kind: SensorKind) in plan.captures.first { $0.kinds.contains(kind) }?.rate }
        // Nobody wants motion: the attitude goes stale the moment the sensors stop (a poll minutes
        // later used to get the old attitude against the new pose, 1 g of user acceleration for a
        // second). What was learnt is kept for the next fusion.
        if !motionNeeded, let idle = fusion {
            saveState()
            savedCalibration = idle.calibration  // a fusion without gyroscope keeps the bias it was given
            fusion = nil
            pendingMotion = nil
        }
        // The fusion follows the sensors there are: a gyroscope unplugged (or plugged in) while motion
        // is watched makes a new one, which keeps the calibration learnt so far.
        if motionNeeded, let accelerometerRate = rate(.accelerometer), fusion?.usesGyroscope != (rate(.gyroscope) != nil) {
            if let fusion { savedCalibration = fusion.calibration }
            var fresh = SensorFusion(
                gyroscopeRate: rate(.gyroscope), accelerometerRate: accelerometerRate, magnetometerRate: rate(.magnetometer),
                declination: declination)
            if let savedCalibration { fresh.restore(savedCalibration) }
            fusion = fresh
            pendingMotion = nil
        }
    }

    /// Ingests what a capture's reader thread posted since the last drain.
    private func drain(_ mailbox: EventMailbox, from number: DeviceNumber) {
        mailbox.take(into: &drained)
        // One write per client for the whole burst: when the loop falls behind, bursts grow and the
        // system calls per line shrink, instead of the backlog growing.
        batch {
            for event in drained { ingest(event, from: number) }
            deliverPendingMotion()
        }
        drained.removeAll(keepingCapacity: true)
    }

    /// Runs `body` with every client's writes held until it ends, then flushes each client once.
    ///
    /// The requests of one read go through here too: a flush can make NIO read the socket again and
    /// re-enter the connection's handler, which must not happen while it is still framing that read.
    func batch(_ body: () -> Void) {
        eventLoop.preconditionInEventLoop()
        let outer = draining
        draining = true
        body()
        draining = outer
        guard !outer else { return }
        while let id = awaitingFlush.popLast() {
            guard let client = clients[id] else { continue }
            client.awaitsFlush = false
            flush(client)
        }
    }

    private func ingest(_ event: SensorEvent, from number: DeviceNumber) {
        switch event {
        case .sample(let sample):
            guard captures[number] != nil else { return }  // a sample in flight from a closed capture
            captures[number]!.samples += 1
            if captures[number]!.firstTimestamp == nil { captures[number]!.firstTimestamp = sample.timestamp }
            captures[number]!.lastTimestamp = sample.timestamp
            merger.add(.init(sample: sample, period: captures[number]!.period(of: sample)), from: number, into: &merged)
            ingestMerged()
        case .captureModeChanged(let mode, let reason):
            logger.notice("sensor capture mode changed", metadata: ["device": "\(number)", "mode": "\(mode)", "reason": "\(reason)"])
        case .readFailed(let error):
            logger.warning("sensor read failed", metadata: ["device": "\(number)", "error": "\(error)"])
        case .readComplete:
            break  // the mailbox wakes the loop on it and does not pass it on
        case .ended(let error):
            logger.warning("sensor ended", metadata: ["device": "\(number)", "reason": "\(error)"])
            guard let running = captures.removeValue(forKey: number) else { return }
            endStreams(needing: running.plan.kinds, reason: error.meansDeviceGone ? "\(number) was removed" : "\(error)")
            if error.meansDeviceGone { devices.removeAll { $0.number == number } }
            replan()
        }
    }

    /// Fuses what the merger let through. Re-entrant: ingesting can answer a poll, which can replan
    /// and release held samples into `merged`; the loop running already takes them, in order, and
    /// none is fused twice (a `for … in merged` over a copy did both). Walking by index also keeps
    /// the array's storage unshared, so nothing is copied.
    private func ingestMerged() {
        guard !ingestingMerged else { return }
        ingestingMerged = true
        var next = 0
        while next < merged.count {
            let entry = merged[next]
            next += 1
            ingest(entry.sample, period: entry.period)
        }
        merged.removeAll(keepingCapacity: true)
        ingestingMerged = false
    }

    private func ingest(_ sample: SensorSample, period: Int64) {
        let t = sample.timestamp
        // A later sample is about to be fused: the pending motion goes out first, stamped as it was.
        if let pending = pendingMotion, t > pending.timestamp { deliverPendingMotion() }
        if sample.kind == .accelerometer, sample.device == baseAccelerometer {
            hinge?.update(base: sample.vector)
            return
        }
        switch sample.kind {
        case .accelerometer:
            if hinge != nil {
                hinge!.update(display: sample.vector)
                if let angle = hinge!.angle, let mode = hinge!.mode {
                    let message = HingeMessage(timestamp: t, angle: angle, mode: mode)
                    latest.hinge = message
                    deliver(.hinge, timestamp: t, period: period) { writer, _ in writer.write(message) }
                }
            }
            fusion?.update(sample)
            // Without a gyroscope, motion is produced at the accelerometer's rate.
            if let fusion, !fusion.usesGyroscope { pendingMotion = (t, period) }
            let acceleration = sample.vector * (-1 / Units.standardGravity)
            let message = AccelerometerMessage(timestamp: t, acceleration: acceleration)
            latest.accelerometer = message
            deliver(.accelerometer, timestamp: t, period: period) { writer, _ in writer.write(message) }
            let previous = orientation.state
            let state = orientation.update(gravity: acceleration)
            latest.orientation = OrientationMessage(timestamp: t, orientation: state)
            if state != previous { deliverEvent(.orientation, latest.orientation!) }
            let previousTilt = tilt.state
            let tiltState = tilt.update(gravity: acceleration)
            latest.tilt = TiltMessage(timestamp: t, tilt: tiltState)
            if tiltState != previousTilt { deliverEvent(.tilt, latest.tilt!) }
        case .gyroscope:
            fusion?.update(sample)
            let message = GyroscopeMessage(timestamp: t, rotationRate: sample.vector)
            latest.gyroscope = message
            deliver(.gyroscope, timestamp: t, period: period) { writer, _ in writer.write(message) }
            // Motion is produced at the gyroscope's rate, once the other samples of the same read
            // (the magnetometer's, often after the gyroscope's in a scan) are fused too.
            if fusion != nil, latest.accelerometer != nil { pendingMotion = (t, period) }
        case .magnetometer:
            fusion?.update(sample)
            let message = MagnetometerMessage(timestamp: t, magneticField: sample.vector)
            latest.magnetometer = message
            deliver(.magnetometer, timestamp: t, period: period) { writer, _ in writer.write(message) }
        case .proximity:
            let message = ProximityMessage(timestamp: t, near: sample.isNear, value: sample.vector.x)
            let changed = latest.proximity?.near != message.near
            latest.proximity = message
            if changed { deliverEvent(.proximity, message) }
        }
        answerPendingPolls()
    }

    /// Sends the motion of the last gyroscope sample, if not yet sent (each frame encoded once).
    private func deliverPendingMotion() {
        guard let (t, period) = pendingMotion, let fusion else { return }
        pendingMotion = nil
        deliver(.motion, timestamp: t, period: period) { writer, frame in writer.write(self.motionMessage(fusion.deviceMotion(in: frame))) }
    }

    private func answerPendingPolls() {
        guard !pendingPolls.isEmpty else { return }
        var answered = false
        for (number, pending) in pendingPolls {
            guard let snapshot = snapshot(for: pending.poll) else { continue }
            pending.timeout.cancel()
            pendingPolls[number] = nil
            clients[pending.client]?.waitingPolls -= 1
            answer(slot: pending.slot, with: snapshot, to: pending.client)
            answered = true
        }
        guard answered else { return }
        for client in clients.values where client.closesWhenAnswered { flush(client) }
        replan()
    }

    private func endStreams(needing kinds: Set<SensorKind>, reason: String) {
        for id in Array(clients.keys) {
            for stream in Array(clients[id]!.watches.keys) where !CapturePlan.kinds(for: stream).required.isDisjoint(with: kinds) {
                clients[id]!.watches[stream] = nil
                send(Ended(stream: stream, reason: reason), to: id, kind: .kept)
            }
        }
    }

    // MARK: Delivery

    /// Sends a periodic stream's message to every client due one, writing it once per frame.
    private func deliver(_ stream: StreamKind, timestamp: Int64, period: Int64, write: (inout LineWriter, AttitudeReferenceFrame) -> Void) {
        var lines = LinesByFrame()
        for (id, client) in clients {
            guard var watch = client.watches[stream] else { continue }
            let due = watch.decimator.accepts(timestamp, sensorPeriod: period)
            client.watches[stream] = watch
            guard due else { continue }
            let frame = stream == .motion ? watch.frame : .xArbitraryZVertical
            if lines[frame] == nil {
                write(&lineWriter, frame)
                lines[frame] = ByteBuffer(bytes: lineWriter.bytes)
            }
            enqueue(lines[frame]!, to: client, id: id, kind: .stream(stream))
        }
    }

    /// One encoded line per reference frame, without a dictionary's allocation.
    private struct LinesByFrame {
        private var lines: (ByteBuffer?, ByteBuffer?, ByteBuffer?, ByteBuffer?)

        subscript(frame: AttitudeReferenceFrame) -> ByteBuffer? {
            get {
                switch frame {
                case .xArbitraryZVertical: lines.0
                case .xArbitraryCorrectedZVertical: lines.1
                case .xMagneticNorthZVertical: lines.2
                case .xTrueNorthZVertical: lines.3
                }
            }
            set {
                switch frame {
                case .xArbitraryZVertical: lines.0 = newValue
                case .xArbitraryCorrectedZVertical: lines.1 = newValue
                case .xMagneticNorthZVertical: lines.2 = newValue
                case .xTrueNorthZVertical: lines.3 = newValue
                }
            }
        }
    }

    private func deliverEvent<M: ServerMessage>(_ stream: StreamKind, _ message: M) {
        guard let bytes = try? Wire.encode(message) else { return }
        let buffer = ByteBuffer(bytes: bytes)
        for (id, client) in clients where client.watches[stream] != nil { enqueue(buffer, to: client, id: id, kind: .kept) }
    }

    private func sendCurrentEvent(_ stream: StreamKind, to id: ClientID) {
        switch stream {
        case .proximity: if let message = latest.proximity { send(message, to: id, kind: .kept) }
        case .orientation: if let message = latest.orientation { send(message, to: id, kind: .kept) }
        case .tilt: if let message = latest.tilt { send(message, to: id, kind: .kept) }
        default: break
        }
    }

    private func send<M: ServerMessage>(_ message: M, to id: ClientID, kind: DeliveryQueue<ByteBuffer>.Kind) {
        if let line = encode(message) { enqueue(line, to: id, kind: kind) }
    }

    private func enqueue(_ line: ByteBuffer, to id: ClientID, kind: DeliveryQueue<ByteBuffer>.Kind) {
        guard let client = clients[id] else { return }
        enqueue(line, to: client, id: id, kind: kind)
    }

    private func enqueue(_ line: ByteBuffer, to client: Client, id: ClientID, kind: DeliveryQueue<ByteBuffer>.Kind) {
        if client.queue.push(line, kind: kind) {
            client.fullSince = nil
        } else if client.queue.count >= Self.queueCapacity * 4 {
            // Replies are never dropped, so this bounds a client's memory: one read of requests can
            // ask for thousands before reading stops.
            disconnect(client, because: "it sends requests faster than it reads the replies (\(client.queue.count) queued)")
            return
        } else if client.fullSince == nil {
            client.fullSince = NIODeadline.now()
            // A client that reads nothing more gets nothing more pushed, so the check cannot wait for
            // the next line: it is scheduled.
            eventLoop.scheduleTask(in: Self.stuckClientTimeout) { [self] in
                guard let client = clients[id], let since = client.fullSince, NIODeadline.now() - since >= Self.stuckClientTimeout
                else { return }
                disconnect(client, because: "it has read none of its replies for \(Double(Self.stuckClientTimeout.nanoseconds) / 1e9) s")
            }
        }
        if draining {
            if !client.awaitsFlush {
                client.awaitsFlush = true
                awaitingFlush.append(id)
            }
        } else {
            flush(client)
        }
    }

    private func disconnect(_ client: Client, because reason: String) {
        guard !client.closing else { return }
        client.closing = true
        logger.warning("client disconnected", metadata: ["client": "\(client.id)", "reason": "\(reason)"])
        // Closed from the loop's next turn, not from inside the request handling that got here: a
        // close there re-enters the connection's handler while it is still framing the read.
        let channel = client.channel
        eventLoop.execute { channel.close(promise: nil) }
    }

    /// Writes what the channel can take now; the rest waits in the queue for writability.
    func flush(_ id: ClientID) {
        eventLoop.preconditionInEventLoop()
        if let client = clients[id] { flush(client) }
    }

    private func flush(_ client: Client) {
        let channel = client.channel
        var wrote = false
        while channel.isWritable, let (line, dropped) = client.queue.pop() {
            if let (stream, count) = dropped, let bytes = try? Wire.encode(Dropped(stream: stream, count: count)) {
                channel.write(ByteBuffer(bytes: bytes), promise: nil)
            }
            channel.write(line, promise: nil)
            wrote = true
        }
        if wrote { channel.flush() }
        // It reads again: the stuck-client check scheduled when its queue filled finds nothing to do.
        if client.queue.count < Self.queueCapacity { client.fullSince = nil }
        if client.closesWhenAnswered, !client.closing, client.queue.isEmpty, client.waitingPolls == 0 {
            client.closing = true
            // An empty write completes after every earlier one: then close.
            channel.writeAndFlush(ByteBuffer()).whenComplete { _ in channel.close(promise: nil) }
        }
        if client.paused && client.queue.count < Self.queueCapacity / 2 {
            client.paused = false
            channel.setOption(ChannelOptions.autoRead, value: true).whenFailure { _ in }
        }
    }

    /// Replies are never dropped, so a client that sends requests faster than it reads the replies
    /// would grow its queue without bound: once its queue is full, its requests are no longer read
    /// (the kernel's socket buffer then holds the sender back) until the queue has drained.
    func pauseReadingIfCongested(_ id: ClientID) {
        eventLoop.preconditionInEventLoop()
        guard let client = clients[id], !client.paused, client.queue.count >= Self.queueCapacity else { return }
        client.paused = true
        logger.debug("client reads its replies slowly: its requests wait", metadata: ["client": "\(id)"])
        client.channel.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in }
    }

    // MARK: Replies

    private func devicesReply(id: RequestID?) -> DevicesReply {
        DevicesReply(id: id, devices: devices.map { device in
            let rates: [Double]? = switch device.availableRates {
            case .list(let list): list
            case .range(let low, _, let high): [low, high]
            case nil: nil
            }
            return DevicesReply.Device(
                device: device.number.sysname, name: device.name, kinds: device.kinds, mode: source.modeName(of: device),
                rates: rates, mountMatrix: device.sensors.first?.mountMatrix.rowMajor ?? Matrix3.identity.rowMajor,
                mountMatrixSource: device.sensors.first?.mountMatrixSource ?? "identity",
                frameMatrix: device.sensors.first { $0.kind.isVector }?.deviceFrameMatrix.rowMajor,
                mountMatrixCorrection: device.sensors.first?.mountMatrixCorrection, label: device.label,
                location: device.location.rawValue,
                channels: Dictionary(uniqueKeysWithValues: device.sensors.map { ($0.kind.rawValue, $0.channels.map(\.valueAttribute)) }))
        })
    }

    private func statusReply(id: RequestID?) -> StatusReply {
        let sensors = captures.values.sorted { $0.plan.device < $1.plan.device }.map { running in
            var measured: Double? = nil
            if let first = running.firstTimestamp, let last = running.lastTimestamp, last > first, running.samples > 1 {
                let perScan = Double(max(1, running.plan.kinds.count))
                measured = (Double(running.samples) / perScan - 1) / (Double(last - first) * 1e-9)
            }
            return StatusReply.Sensor(
                device: running.plan.device.sysname, kinds: running.plan.kinds.sorted { $0.rawValue < $1.rawValue },
                mode: running.capture.modeName, rate: running.capture.rate, measuredRate: measured)
        }
        let dropped = droppedByGoneClients + clients.values.reduce(0) { $0 + $1.queue.totalDropped }
        var calibration = fusion.map { f in
            StatusReply.Calibration(
                gyroscopeBias: f.filter.gyroscopeBias, gyroscopeScale: f.filter.gyroscopeScale, magnetometerOffset: f.calibrator.offset,
                magneticFieldAccuracy: f.calibrator.accuracy)
        }
        if calibration == nil, let saved = savedCalibration {
            calibration = StatusReply.Calibration(
                gyroscopeBias: saved.gyroscopeBias, gyroscopeScale: saved.gyroscopeScale, magnetometerOffset: saved.magnetometerOffset,
                magneticFieldAccuracy: saved.magnetometerOffsetError == nil ? .uncalibrated : .low)
        }
        return StatusReply(
            id: id, uptime: Double((NIODeadline.now() - startTime).nanoseconds) / 1e9, clients: clients.count, sensors: sensors,
            dropped: dropped, calibration: calibration, unavailable: unavailable)
    }

    private func motionMessage(_ motion: DeviceMotion) -> MotionMessage {
        let a = motion.attitude
        return MotionMessage(
            timestamp: motion.timestamp, frame: motion.referenceFrame,
            attitude: AttitudeMessage(quaternion: a.quaternion, roll: a.roll, pitch: a.pitch, yaw: a.yaw, rotationMatrix: a.rotationMatrix),
            gravity: motion.gravity, userAcceleration: motion.userAcceleration, rotationRate: motion.rotationRate,
            magneticField: CalibratedFieldMessage(field: motion.magneticField, accuracy: motion.magneticFieldAccuracy),
            heading: motion.heading, unavailable: motion.unavailable)
    }

    /// Stops every capture (at shutdown).
    func stopAll() {
        eventLoop.preconditionInEventLoop()
        lingerEnd?.cancel()
        recentPolls.removeAll()
        saveStateNow()
        for running in captures.values { running.capture.stop() }
        captures.removeAll()
    }
}
