import MotionCore
import MotionDevices
import MotionSystem
import NIOCore
import NIOPosix
import Synchronization

/// A chip's own functions on one device, as `ChipWatch` reads them: the device layer's
/// `ChipFunctions`, or a test's scripted chip.
package protocol ChipDevice: AnyObject, Sendable {
    /// The chip functions opened (`SensorKind.isChipFunction`).
    var kinds: Set<SensorKind> { get }
    /// Why the chip's events cannot be had (nil: they can): it is then read at its interval only.
    var eventsProblem: DeviceError? { get }
    /// The chip's IIO event descriptor, once (nil: none, or taken).
    func takeEventDescriptor() -> OwnedDescriptor?
    /// Appends the current value of each readable function to `samples`.
    func read(into samples: inout [SensorSample]) throws(DeviceError)
    /// Turns the events of `kind` on or off.
    func setEvents(of kind: SensorKind, enabled: Bool) throws(DeviceError)
    /// What an event record of the chip says (nil: none of its functions'), its sample stamped `t`
    /// (ns, monotonic) where the event is its own value.
    func event(_ record: IIOEventRecord, device: DeviceNumber, at t: Int64) -> ChipEvent?
    /// Puts the chip back as it was found (its events' enables); idempotent.
    func close()
}

/// One event of a chip's function: its kind, and the sample it means where it carries its own value
/// (significant motion, on-body); nil: it only says "read me" (the count or the activity changed).
package struct ChipEvent: Sendable {
    /// The function it is about.
    package var kind: SensorKind
    /// The sample it means (nil: read the chip).
    package var sample: SensorSample?

    /// An event of `kind`, meaning `sample` (nil: read the chip).
    package init(kind: SensorKind, sample: SensorSample?) { (self.kind, self.sample) = (kind, sample) }
}

/// Reads a chip's functions (its step counter, activity, significant motion, on-body) on the hub's
/// loop: at each of its events (the event descriptor is a channel of the loop's, as
/// `MotionEventReader`'s is) and at a timer of the loop's, emitting each read's samples then
/// `.readComplete`, as every capture does. The chip's function does the counting: the daemon wakes
/// only when the chip says something changed, and at the interval a client asked for.
///
/// - While the step count moves (a read finds new steps), the step events are turned off, so that the
///   daemon is not woken per step, and the chip is read every `interval`.
/// - A read that finds no new steps turns them back on, and the chip is then read only at its events
///   and every `heartbeat` (a chip whose events never come is still read).
/// - Where the events cannot be had (`ChipDevice.eventsProblem`, no descriptor, or its channel
///   failed), the chip is read every `interval` always: the count does not change at rest, so
///   nothing is sent then.
/// - An event that carries its own value (significant motion, on-body) is a sample at once.
///
/// A read that fails is reported (`.readFailed`); the watch ends (`.ended`) when the device is gone
/// or after `CapturePolicy.failuresThatEnd` failures in a row, as a polled capture does.
final class ChipWatch: SensorStream, @unchecked Sendable {
    // @unchecked: the mutable state is behind `state`; it is touched on the loop, but for `stop`.
    /// How the chip's events reach the watch.
    enum EventDelivery: Sendable {
        /// Through its event descriptor, a channel of the loop's.
        case descriptor
        /// By `take(_:)`, called on the loop (a test's scripted chip).
        case injected
    }

    let device: DeviceNumber
    let kinds: Set<SensorKind>
    /// Seconds between reads while the count moves, or where events cannot be had.
    let interval: Double
    /// Seconds between reads while the chip's events wake it.
    let heartbeat: Double
    let eventLoop: any EventLoop
    private let delivery: EventDelivery
    /// Whether the chip is opened and closed on threads of their own (a test's scripted chip, on a
    /// testing loop: on the loop).
    private let opensOffLoop: Bool
    private let openChip: @Sendable () throws(DeviceError) -> any ChipDevice
    private let deviceExists: @Sendable () -> Bool
    private let state: Mutex<State>

    private struct State {
        var handler: (@Sendable (SensorEvent) -> Void)?
        var chip: (any ChipDevice)?
        var stopped = false
        /// Whether the chip's events wake the watch.
        var eventsOn = false
        /// Why they do not (nil: they do, or the chip is not open yet).
        var eventsProblem: DeviceError?
        /// Whether the step counter's events are enabled (they are at opening).
        var stepEventsOn = true
        /// The count the last read found.
        var lastSteps: Double?
        var failures = 0
        var timer: Scheduled<Void>?
        /// When the set timer is due.
        var timerDue: NIODeadline?
        /// When the chip was last read (nil: not yet).
        var lastRead: NIODeadline?
        var channel: (any Channel)?
        /// Settled once the chip is open (or failed to): `stop` waits for it off the loop.
        var opening: EventLoopFuture<Void>?
    }

    /// Samples of one read, reused (touched on the loop only).
    private var samples: [SensorSample] = []

    /// A watch of `kinds` of `device`'s chip functions, opened by `open` (blocking: on a thread of its
    /// own where `opensOffLoop`, else on the loop, for a test's scripted chip); `interval` and
    /// `heartbeat` in seconds; `deviceExists` tells a failing read from a device gone.
    init(
        device: DeviceNumber, kinds: Set<SensorKind>, interval: Double, heartbeat: Double = AdaptivePolling.heartbeat, eventLoop: any EventLoop,
        delivery: EventDelivery = .descriptor, opensOffLoop: Bool = true, deviceExists: @escaping @Sendable () -> Bool,
        open: @escaping @Sendable () throws(DeviceError) -> any ChipDevice
    ) {
        self.device = device
        self.kinds = kinds
        self.interval = interval
        self.heartbeat = heartbeat
        self.eventLoop = eventLoop
        self.delivery = delivery
        self.opensOffLoop = opensOffLoop
        self.deviceExists = deviceExists
        openChip = open
        state = Mutex(State())
    }

    /// The rate it reads at while the count moves, Hz.
    var rate: Double { 1 / interval }

    /// `events` while the chip's events wake it, `polled` while it is read at its interval only.
    var readingMode: ReadingMode { state.withLock { $0.eventsOn } ? .events : .polled }

    var restMode: (mode: RestMode, note: DeviceError?)? { nil }

    /// Why the chip is read at its interval only (its events could not be had).
    var readingNote: DeviceError? { state.withLock { $0.eventsProblem } }

    /// Whether the step counter's events are on now (off while a walk goes on).
    var stepEventsOn: Bool { state.withLock { $0.stepEventsOn } }

    /// Opens the chip (off the loop where it blocks), then reads it at once (the current count and
    /// activity, for the first state) and from then on at its events and timer. Nothing is handed
    /// to `handler` before this returns: the hub starts captures inside its replan.
    func start(handler: @escaping @Sendable (SensorEvent) -> Void) {
        state.withLock { $0.handler = handler }
        let open = openChip
        if opensOffLoop {
            let opening = eventLoop.runOnThreadOfItsOwn(named: "open \(device.sysname)") { () throws -> any ChipDevice in try open() }
            state.withLock { $0.opening = opening.map { _ in } }
            opening.whenComplete { [self] result in opened(result.mapError { $0 as? DeviceError ?? .deviceVanished(device: device.sysname) }) }
        } else {
            eventLoop.execute { [self] in opened(Result { () throws(DeviceError) in try open() }) }
        }
    }

    /// On the loop: the chip is open (or failed to open).
    private func opened(_ result: Result<any ChipDevice, DeviceError>) {
        let chip: any ChipDevice
        switch result {
        case .failure(let error):
            return end(error)
        case .success(let opened):
            chip = opened
        }
        let kept = state.withLock { state in
            if !state.stopped { state.chip = chip }
            return !state.stopped
        }
        guard kept else { return chip.close() }
        if let problem = chip.eventsProblem {
            state.withLock { $0.eventsProblem = problem }
            // For the journal: the chip is read at its interval, and why.
            state.withLock { $0.handler }?(.captureModeChanged(.polled, reason: problem))
        } else {
            switch delivery {
            case .injected: state.withLock { $0.eventsOn = true }
            case .descriptor: attachEvents(of: chip)
            }
        }
        read()
    }

    // MARK: Reading

    /// Reads the chip now, emits what it read, follows the step count and sets the next read.
    private func read() {
        let now = eventLoop.now
        guard let (chip, told) = state.withLock({ state in
            state.lastRead = now
            return state.stopped ? nil : state.chip.map { ($0, state.handler) }
        }),
            let handler = told
        else { return }
        samples.removeAll(keepingCapacity: true)
        do throws(DeviceError) {
            try chip.read(into: &samples)
        } catch {
            let failures = state.withLock { state in
                state.failures += 1
                return state.failures
            }
            if error.meansDeviceGone || !deviceExists() { return end(.deviceVanished(device: device.sysname)) }
            if failures >= CapturePolicy.failuresThatEnd { return end(error) }
            handler(.readFailed(error))
            return schedule(after: interval)
        }
        state.withLock { $0.failures = 0 }
        for sample in samples { handler(.sample(sample)) }
        handler(.readComplete)
        // The hub may have stopped the watch meanwhile (a sleep seen in the read): its chip is put back.
        guard !state.withLock({ $0.stopped }) else { return }
        followSteps(of: chip, handler: handler)
        let resting = state.withLock { $0.eventsOn && $0.stepEventsOn }
        schedule(after: resting ? heartbeat : interval)
    }

    /// Turns the step events off while the count moves, on again when a read finds no new steps.
    private func followSteps(of chip: any ChipDevice, handler: @Sendable (SensorEvent) -> Void) {
        guard let steps = samples.last(where: { $0.kind == .stepCounter })?.vector.x else { return }
        let (eventsOn, wasOn, last) = state.withLock { state in
            defer { state.lastSteps = steps }
            return (state.eventsOn, state.stepEventsOn, state.lastSteps)
        }
        let moving = last.map { $0 != steps } ?? false
        guard eventsOn, moving == wasOn else { return }
        do throws(DeviceError) {
            try chip.setEvents(of: .stepCounter, enabled: !moving)
            state.withLock { $0.stepEventsOn = !moving }
        } catch {
            // As it was: with the events still on the walk wakes the watch per event; still off,
            // the interval reads go on.
            handler(.readFailed(error))
        }
    }

    /// The next read `seconds` from now, in place of the one set.
    private func schedule(after seconds: Double) {
        let delay = TimeAmount.nanoseconds(Int64(seconds * 1e9))
        let due = eventLoop.now + delay
        let task = eventLoop.scheduleTask(in: delay) { [weak self] () -> Void in self?.read() }
        let previous = state.withLock { state in
            defer { (state.timer, state.timerDue) = state.stopped ? (nil, nil) : (task, due) }
            return state.stopped ? task : state.timer
        }
        previous?.cancel()
    }

    /// The least time between two reads an event brings, s: the interval, at most a second. An
    /// interrupt storm (a chip whose step events keep coming while its count holds, or its activity
    /// events, which are never turned off) would otherwise read the chip back to back on the loop,
    /// each read a bus transfer.
    var eventReadSpacing: Double { min(interval, 1) }

    /// The chip's events (on the loop): those that carry their value are samples at once; any other
    /// of the watched functions' makes a read now.
    func take(_ events: [ChipEvent]) {
        guard let handler = state.withLock({ $0.stopped ? nil : $0.handler }) else { return }
        var readNow = false
        var sent = false
        for event in events where kinds.contains(event.kind) {
            if let sample = event.sample {
                handler(.sample(sample))
                sent = true
            } else {
                readNow = true
            }
        }
        if sent { handler(.readComplete) }
        guard readNow else { return }
        let now = eventLoop.now
        let (lastRead, timerDue) = state.withLock { ($0.lastRead, $0.timerDue) }
        let spacing = TimeAmount.nanoseconds(Int64(eventReadSpacing * 1e9))
        guard let lastRead, now < lastRead + spacing else { return read() }
        // Read once the spacing has passed, unless a read is set before then already.
        if timerDue.map({ $0 > lastRead + spacing }) ?? true { schedule(after: Double((lastRead + spacing - now).nanoseconds) * 1e-9) }
    }

    // MARK: Events through the descriptor

    /// Reads the chip's event descriptor through a channel of the loop's; one that cannot be had
    /// leaves the chip read at its interval, the reason kept for STATUS.
    private func attachEvents(of chip: any ChipDevice) {
        guard let owned = chip.takeEventDescriptor() else {
            return eventsFailed(.eventsRefused(device: device.sysname, operation: "take the event descriptor", errno: ErrnoValue.badDescriptor))
        }
        let descriptor = owned.take()
        state.withLock { $0.eventsOn = true }
        let reader = ChipEventReader(watch: self, chip: chip, device: device)
        readingChannel(of: descriptor, on: eventLoop, readSize: IIOEventRecord.size * 16, handler: reader) { [weak self] error in
            self?.eventsEnded(error)
        }
            .whenComplete { [self] result in
                switch result {
                case .success(let channel):
                    let kept = state.withLock { state in
                        if !state.stopped { state.channel = channel }
                        return !state.stopped
                    }
                    if !kept { channel.close(promise: nil) }
                case .failure(let error):
                    eventsEnded(error)
                }
            }
    }

    /// The events' channel failed or ended: the chip is read at its interval from now.
    private func eventsEnded(_ error: any Error) {
        let errno = (error as? Errno)?.rawValue ?? (error as? IOError)?.errnoCode ?? ErrnoValue.invalidArgument
        eventsFailed(error as? DeviceError ?? .eventsRefused(device: device.sysname, operation: "read", errno: errno))
    }

    private func eventsFailed(_ problem: DeviceError) {
        let (wasOn, handler) = state.withLock { state in
            defer { (state.eventsOn, state.eventsProblem, state.channel) = (false, problem, nil) }
            return (state.stopped ? false : state.eventsOn || state.eventsProblem == nil, state.handler)
        }
        guard wasOn else { return }
        handler?(.captureModeChanged(.polled, reason: problem))
        // Reads at the interval from now, rather than at the next heartbeat.
        schedule(after: interval)
    }

    // MARK: Stopping

    /// The watch is over: closes the chip and tells the handler why.
    private func end(_ error: DeviceError) {
        let handler = state.withLock { $0.stopped ? nil : $0.handler }
        close()
        handler?(.ended(error))
    }

    /// On the loop, between reads: marks the watch stopped, cancels its timer and takes the chip and
    /// the events' channel, which the caller closes.
    private func markStopped() -> (chip: (any ChipDevice)?, channel: (any Channel)?) {
        let (chip, channel, timer) = state.withLock { state in
            defer { (state.stopped, state.chip, state.channel, state.timer) = (true, nil, nil, nil) }
            return (state.chip, state.channel, state.timer)
        }
        timer?.cancel()
        return (chip, channel)
    }

    /// Stops on the loop: the chip's attributes are put back on a thread of their own, as every
    /// blocking job is (sysfs writes, each a bus transfer on a chip that may have stopped answering).
    private func close() {
        let (chip, channel) = markStopped()
        channel?.close(promise: nil)
        guard let chip else { return }
        if opensOffLoop {
            _ = eventLoop.runOnThreadOfItsOwn(named: "close \(device.sysname)") { chip.close() }
        } else {
            chip.close()
        }
    }

    /// Stops reading and puts the chip back; off the loop, waits for an opening under way and for the
    /// loop to be between reads, and puts the chip back before it returns.
    func stop() {
        guard !eventLoop.inEventLoop else { return close() }
        _ = try? state.withLock({ $0.opening })?.wait()
        guard let (chip, channel) = try? eventLoop.submit({ [self] in markStopped() }).wait() else { return }
        try? channel?.close().wait()
        chip?.close()
    }
}

/// Reads a chip's event records (`iio_event_data`) from its channel and hands each read's to the
/// watch once the read is complete.
private final class ChipEventReader: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: runs on its channel's event loop only.
    typealias InboundIn = ByteBuffer

    private weak var watch: ChipWatch?
    private let chip: any ChipDevice
    private let device: DeviceNumber
    private var events: [ChipEvent] = []

    init(watch: ChipWatch, chip: any ChipDevice, device: DeviceNumber) {
        (self.watch, self.chip, self.device) = (watch, chip, device)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        // The read time stamps an event's sample: the record's own clock is the device's
        // (`current_timestamp_clock`), not necessarily the monotonic one the hub's samples share.
        let now = Syscall.monotonicNanoseconds()
        bytes.withUnsafeReadableBytes { raw in
            var offset = 0
            while let record = IIOEventRecord(UnsafeRawBufferPointer(rebasing: raw[offset...])) {
                if let event = chip.event(record, device: device, at: now) { events.append(event) }
                offset += IIOEventRecord.size
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard !events.isEmpty else { return }
        watch?.take(events)
        events.removeAll(keepingCapacity: true)
    }
}

/// A device read by both a capture of its sampled sensors and a watch of its chip functions (a bma400
/// whose accelerometer an orientation client reads while its step counter counts): one stream to the
/// hub, the first to end ending both.
final class CompositeStream: SensorStream, @unchecked Sendable {
    // @unchecked: both parts are Sendable; `ended` is behind a lock.
    let sampled: any SensorStream
    let chip: ChipWatch
    private let ended = Mutex(false)

    init(sampled: any SensorStream, chip: ChipWatch) { (self.sampled, self.chip) = (sampled, chip) }

    var rate: Double { sampled.rate }
    var readingMode: ReadingMode { sampled.readingMode }
    var restMode: (mode: RestMode, note: DeviceError?)? { sampled.restMode }
    var readingNote: DeviceError? { sampled.readingNote ?? chip.readingNote }

    func start(handler: @escaping @Sendable (SensorEvent) -> Void) {
        let forward: @Sendable (any SensorStream) -> @Sendable (SensorEvent) -> Void = { [self] other in
            { event in
                guard case .ended = event else { return handler(event) }
                let first = self.ended.withLock { wasEnded in
                    defer { wasEnded = true }
                    return !wasEnded
                }
                guard first else { return }
                // On the loop a part closes without waiting; from a polling thread, the chip's watch
                // waits for the loop, which that thread never holds.
                other.stop()
                handler(event)
            }
        }
        sampled.start(handler: forward(chip))
        chip.start(handler: forward(sampled))
    }

    func stop() {
        sampled.stop()
        chip.stop()
    }
}

extension ChipFunctions: ChipDevice {
    package func event(_ record: IIOEventRecord, device: DeviceNumber, at t: Int64) -> ChipEvent? {
        Self.kind(of: record).map { ChipEvent(kind: $0, sample: Self.sample(of: record, device: device, at: t)) }
    }
}
