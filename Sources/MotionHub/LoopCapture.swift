import MotionCore
import MotionDevices
import MotionSystem
import NIOCore
import NIOPosix
import Synchronization

/// A capture read on the hub's event loop: the IIO buffer's descriptor (or, for a sensor polled at a
/// low rate, a timer's) is one more NIO channel beside the clients', so a batch of scans goes from
/// the kernel to the clients' sockets on one thread, for one wake-up (a capture thread would add its
/// own wake-up and a hand-over per read).
///
/// The device is opened off the loop (libiio scans all of sysfs), then read as NIO reports the
/// descriptor readable: every `batch` scans, the buffer's watermark, or every period of the timer.
/// A buffer that cannot be opened, or gives no scan within `firstDataTimeout`, falls back to polling,
/// as a buffered `SensorCapture` would: on the loop up to the event streams' rate, else on a thread
/// of its own (a sysfs read can block for a bus transfer), whose events go to the handler from that
/// thread; all others go to it on the loop.
///
/// An accelerometer that only event streams read (`restsWhenStill`) sleeps while it lies still: its
/// chip's motion events wake it where the driver has them (`MotionEvents`, a second channel), else
/// it is polled slowly at rest (`AdaptivePolling`).
final class LoopCapture: SensorStream, @unchecked Sendable {
    // @unchecked: the mutable state is behind `state`; `handler` is set once before anything runs.
    let device: DeviceDescriptor
    let kinds: [SensorKind]
    let rate: Double
    /// Scans per read of a buffer: as many as `latency` lets wait.
    let batch: Int
    /// Whether only event streams read it: polled, it slows while still (`AdaptivePolling`).
    let restsWhenStill: Bool
    /// How it opens the device: polled for an accelerometer that rests when still, buffered or not (a
    /// slow poll at rest, or its chip's motion events, cost fewer wake-ups than a buffer's batches at
    /// the slowest rate it offers), except an HID sensor hub's, whose buffer may fall silent at rest
    /// (`HysteresisTrial`); else as the device is read best.
    let startMode: CaptureMode
    /// Whether the buffer is read while an `HysteresisTrial` finds out if the hub honours its hysteresis.
    let triesHysteresis: Bool
    /// Seconds between reads at rest while the chip's motion events wake it.
    let heartbeat: Double
    fileprivate let eventLoop: any EventLoop
    private let policy: CapturePolicy
    private let state: Mutex<State>
    fileprivate private(set) var handler: @Sendable (SensorEvent) -> Void = { _ in }

    private struct State {
        var stopped = false
        /// What follows what (the rules it shares with `SensorCapture`).
        var lifecycle: CaptureLifecycle
        var buffer: ScanBuffer?
        var poller: PolledSensors?
        var channel: (any Channel)?
        var polledThread: SensorCapture?
        /// The chip's motion events and the channel that reads them, while they wake the capture.
        var events: MotionEvents?
        var eventsChannel: (any Channel)?
        /// How a capture that rests when still learns of a move, and why a better way was refused.
        var rest: (mode: RestMode, note: DeviceError?)?
        /// Why the buffer of a resting accelerometer was given up for polling: the rest note, rather
        /// than the poller's own (a hub has no motion events).
        var pollingReason: DeviceError?
        /// Settled once reading has begun or was given up: `stop` waits for it.
        var opening: EventLoopFuture<Void>?
    }

    /// A capture of `kinds` of `device` at `rate` Hz (rounded up to what the device offers) on
    /// `eventLoop`, whose scans may wait up to `latency` seconds to be read together;
    /// `firstDataTimeout` in seconds (default `CapturePolicy`'s); `restsWhenStill`: only event streams
    /// read it; `heartbeat`: seconds between reads at rest while its motion events wake it.
    init(
        device: DeviceDescriptor, kinds: [SensorKind], rate: Double, latency: Double, eventLoop: any EventLoop, firstDataTimeout: Double? = nil,
        restsWhenStill: Bool = false, heartbeat: Double = AdaptivePolling.heartbeat
    ) {
        self.restsWhenStill = restsWhenStill
        self.heartbeat = heartbeat
        let restingAccelerometer = restsWhenStill && kinds == [.accelerometer]
        triesHysteresis = restingAccelerometer && device.captureMode == .buffered && ScanBuffer.hasAccelerometerHysteresis(device)
        startMode = restingAccelerometer && !triesHysteresis ? .polled : device.captureMode
        self.device = device
        self.kinds = kinds
        self.rate = device.captureRate(for: rate, in: startMode)
        batch = min(CapturePlan.largestBatch, max(1, Int(saturating: latency * self.rate)))
        self.eventLoop = eventLoop
        policy = CapturePolicy(rate: self.rate, batch: batch, firstDataTimeout: firstDataTimeout)
        state = Mutex(State(lifecycle: CaptureLifecycle(device: device.number.sysname, policy: policy, startingIn: startMode)))
    }

    /// Runs `body` on the capture's lifecycle (from the loop, or the opening's thread).
    fileprivate func lifecycle<Result>(_ body: (inout CaptureLifecycle) -> Result) -> Result {
        state.withLock { body(&$0.lifecycle) }
    }

    /// Whether a device polled at `rate` Hz is polled on the loop rather than on a thread: up to the
    /// event streams' rate (`CapturePlan.eventRate`).
    static func pollsOnLoop(rate: Double) -> Bool { rate <= CapturePlan.eventRate }

    var modeName: String {
        state.withLock { state in
            state.buffer != nil ? CaptureMode.buffered : state.poller != nil || state.polledThread != nil ? .polled : startMode
        }.rawValue
    }

    var restMode: (mode: RestMode, note: DeviceError?)? { state.withLock { $0.rest } }

    /// Starts; `handler` gets every event (on the event loop, or a polling thread's on that thread),
    /// each read's samples followed by `readComplete`.
    func start(handler: @escaping @Sendable (SensorEvent) -> Void) {
        self.handler = handler
        let opened = startMode == .buffered ? openBuffer() : openPoller()
        state.withLock { $0.opening = opened }
    }

    // MARK: Buffered

    private func openBuffer() -> EventLoopFuture<Void> {
        let (device, kinds, rate, batch) = (device, kinds, rate, batch)
        return NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) {
            try ScanBuffer(device: device, kinds: kinds, rate: rate, watermark: batch)
        }.flatMap { [self] buffer in
            attach(buffer)
        }.flatMapError { [self] error in
            let error = deviceError(error, "open")
            return follow(lifecycle { $0.openFailed(error, deviceExists: !error.isVanished) })
        }
    }

    /// Reads `buffer` through a channel of the loop's (unless the capture was stopped meanwhile).
    private func attach(_ buffer: ScanBuffer) -> EventLoopFuture<Void> {
        guard keep({ $0.buffer = buffer }) else {
            buffer.close()
            return eventLoop.makeSucceededVoidFuture()
        }
        for problem in buffer.problems { handler(.readFailed(problem)) }
        var handler = handler
        if triesHysteresis {
            let trial = HysteresisProbe(capture: self, buffer: buffer)
            handler = { [handler] event in
                if case .sample(let sample) = event { trial.observe(sample) }
                handler(event)
            }
        }
        let reader = ScanReader(buffer: buffer, handler: handler) { [weak self] in self?.lifecycle { $0.readSucceeded() } }
        // Room for the kernel's four batches; it hands out whole scans only.
        let capacity = max(buffer.scanSize, buffer.scanSize * batch * ScanBuffer.lengthPerWatermark)
        return register({ () throws(DeviceError) in try buffer.makeReadDescriptor() }, reader: reader, readSize: capacity, keptAs: \.channel).map { [self] attached in
            guard attached else { return }
            lifecycle { $0.opened() }
            watch(buffer)
        }
    }

    /// Checks a buffer after the policy's `firstDataTimeout`, then every `checkInterval`, as the
    /// lifecycle says (no first scan: polled instead; silent and gone: ended). Sparse, as each check
    /// can be a wake-up of its own (a batch of 0.1 s at 100 Hz wakes the loop 10 times a second; this
    /// adds one every 2 s).
    private func watch(_ buffer: ScanBuffer, after delay: Double? = nil) {
        eventLoop.scheduleTask(in: .nanoseconds(Int64(saturating: (delay ?? policy.firstDataTimeout) * 1e9))) { [weak self] in
            guard let self, state.withLock({ $0.buffer === buffer }) else { return }
            switch lifecycle({ $0.checkDue(deviceExists: buffer.deviceExists) }) {
            // A hub that keeps still at rest is checked once a heartbeat: each check is a wake-up.
            case .proceed, .report: watch(buffer, after: restMode?.mode == .hysteresis ? heartbeat : policy.checkInterval)
            case let action: _ = follow(action)
            }
        }
    }

    /// Does what the lifecycle said: polls instead, or ends.
    private func follow(_ action: CaptureLifecycle.Action) -> EventLoopFuture<Void> {
        switch action {
        case .proceed: break
        case .report(let problem): handler(.readFailed(problem))
        case .fallBackToPolling(let reason): return fallBackToPolling(because: reason)
        case .end(let reason): failed(reason)
        }
        return eventLoop.makeSucceededVoidFuture()
    }

    // MARK: Polled

    /// The buffer gave nothing, or could not be opened: the device is polled instead.
    private func fallBackToPolling(because reason: DeviceError) -> EventLoopFuture<Void> {
        eventLoop.preconditionInEventLoop()
        closeReading()
        guard !state.withLock({ $0.stopped }) else { return eventLoop.makeSucceededVoidFuture() }
        handler(.captureModeChanged(.polled, reason: reason))
        if Self.pollsOnLoop(rate: rate) { return openPoller() }
        // On a thread of its own (`SensorCapture`), which hands its events to the handler.
        do {
            let polled = try SensorCapture(device: device, kinds: kinds, rate: rate, mode: .polled)
            if keep({ $0.polledThread = polled }) { polled.start(handler: handler) }
        } catch {
            handler(.ended(error))
        }
        return eventLoop.makeSucceededVoidFuture()
    }

    private func openPoller() -> EventLoopFuture<Void> {
        let (device, kinds, rate) = (device, kinds, rate)
        let wantsEvents = restsWhenStill && kinds == [.accelerometer]
        // The motion events where they are asked for, or why there are none.
        return NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) { () throws -> (PolledSensors, Result<MotionEvents, DeviceError>?) in
            let poller = try PolledSensors(device: device, kinds: kinds, rate: rate)
            return (poller, wantsEvents ? Result { () throws(DeviceError) in try MotionEvents(device: device) } : nil)
        }.flatMap { [self] (poller, events) -> EventLoopFuture<Void> in
            guard keep({ $0.poller = poller }) else {
                poller.close()
                try? events?.get().close()
                return eventLoop.makeSucceededVoidFuture()
            }
            for problem in poller.problems { handler(.readFailed(problem)) }
            let reader = PollTicker(poller: poller, capture: self)
            let opened = register({ () throws(DeviceError) in
                let timer = try poller.makeTimer()
                reader.timer = timer
                return timer
            }, reader: reader, readSize: 64, keptAs: \.channel)
            return opened.flatMap { [self] attached in
                guard attached else {
                    try? events?.get().close()
                    return eventLoop.makeSucceededVoidFuture()
                }
                lifecycle { $0.opened() }
                switch events {
                case nil: return eventLoop.makeSucceededVoidFuture()
                case .failure(let refusal):
                    let earlier = state.withLock { $0.pollingReason }
                    restOn(.adaptivePolling, because: refusal == .noMotionEvents(device: device.number.sysname) ? earlier ?? refusal : refusal)
                    return eventLoop.makeSucceededVoidFuture()
                case .success(let events): return wake(on: events, ticker: reader)
                }
            }
        }.flatMapError { [self] error in
            let error = deviceError(error, "poll")
            if case .end(let reason) = lifecycle({ $0.openFailed(error, deviceExists: !error.isVanished) }) { handler(.ended(reason)) }
            return eventLoop.makeSucceededVoidFuture()
        }
    }

    // MARK: Both

    /// Runs `change` on the state unless the capture was stopped; returns whether it ran.
    private func keep(_ change: (inout State) -> Void) -> Bool {
        state.withLock { state in
            if !state.stopped { change(&state) }
            return !state.stopped
        }
    }

    /// Makes a channel of the loop's read the descriptor `open` gives, with `reader` as its handler
    /// and reads of `readSize` bytes; the channel's end (an error, or the descriptor closing by
    /// itself) ends the capture. Its future says whether the capture still wants it.
    private func register(
        _ open: () throws(DeviceError) -> Int32, reader: any ChannelInboundHandler & Sendable, readSize: Int,
        keptAs slot: WritableKeyPath<State, (any Channel)?> & Sendable, end: (@Sendable (any Error) -> Void)? = nil
    ) -> EventLoopFuture<Bool> {
        let descriptor: Int32
        do {
            descriptor = try open()
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        return NIOPipeBootstrap(group: eventLoop)
            .channelOption(ChannelOptions.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: readSize))
            .channelInitializer { [weak self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers(reader, ChannelEnd { error in
                        if let end { end(error) } else { self?.failed(error, on: channel) }
                    })
                }
            }
            .takingOwnershipOfDescriptor(input: descriptor)
            .flatMapErrorThrowing { error in
                Syscall.close(descriptor)
                throw error
            }
            .map { [self] channel in
                let wanted = keep { $0[keyPath: slot] = channel }
                if !wanted { channel.close(promise: nil) }
                return wanted
            }
    }

    /// A read failed or the descriptor closed by itself: the capture ends, as unplugged if the device is gone.
    /// `channel`: the channel it came from; the end of one closed for a fallback to polling is no end
    /// of the capture (it can come after the poller took over).
    fileprivate func failed(_ error: any Error, on channel: (any Channel)? = nil) {
        let (buffer, poller, stopped, current) = state.withLock { ($0.buffer, $0.poller, $0.stopped, $0.channel) }
        guard !stopped, buffer != nil || poller != nil else { return }
        if let channel, let current, channel !== current { return }
        var reason = deviceError(error, "read")
        if !(error is DeviceError) {  // a `DeviceError` is the lifecycle's end, said already
            let deviceExists = buffer?.deviceExists ?? poller?.deviceExists ?? true
            guard case .end(let ended) = lifecycle({ $0.readingEnded(reason, deviceExists: deviceExists) }) else { return }
            reason = ended
        }
        closeReading()
        handler(.ended(reason))
    }

    /// `error` as a `DeviceError`: as it is if it is one, else `make`'s failure of `operation` on the
    /// device, with the errno NIO gives (else EINVAL).
    private func deviceError(
        _ error: any Error, _ operation: String, _ make: (String, String, Int32) -> DeviceError = DeviceError.bufferFailed
    ) -> DeviceError {
        error as? DeviceError ?? make(device.number.sysname, operation, (error as? IOError)?.errnoCode ?? ErrnoValue.invalidArgument)
    }

    /// Closes the channel and what it read (waiting for the loop when not on it).
    private func closeReading() {
        let (channel, buffer, poller) = state.withLock { state in
            defer { (state.channel, state.buffer, state.poller) = (nil, nil, nil) }
            return (state.channel, state.buffer, state.poller)
        }
        close(channel)
        closeEvents()
        buffer?.close()
        poller?.close()
    }

    private func close(_ channel: (any Channel)?) {
        if eventLoop.inEventLoop {
            channel?.close(promise: nil)
        } else {
            try? channel?.close().wait()
        }
    }

    // MARK: Resting

    /// Reads `events` through a channel of the loop's: each wakes `ticker`, which then polls fast
    /// until the device is still again.
    private func wake(on events: MotionEvents, ticker: PollTicker) -> EventLoopFuture<Void> {
        guard keep({ $0.events = events }) else {
            events.close()
            return eventLoop.makeSucceededVoidFuture()
        }
        let reader = MotionEventReader(ticker: ticker)
        let attached = register({ () throws(DeviceError) in
            guard let descriptor = events.takeDescriptor() else {
                throw .eventsRefused(device: device.number.sysname, operation: "read", errno: ErrnoValue.badDescriptor)
            }
            return descriptor
        }, reader: reader, readSize: IIOEventRecord.size * 16, keptAs: \.eventsChannel) { [weak self, weak ticker] error in
            self?.stopWaking(because: error, ticker: ticker)
        }
        return attached.map { [self] wanted in
            guard wanted else { return }
            ticker.wakeOnEvents()
            restOn(.motionEvents, because: nil)
        }.flatMapError { [self] error in
            closeEvents()
            restOn(.adaptivePolling, because: deviceError(error, "read", DeviceError.eventsRefused))
            return eventLoop.makeSucceededVoidFuture()
        }
    }

    /// The events failed or never came although the device moved: it is polled slowly at rest instead.
    fileprivate func stopWaking(because error: any Error, ticker: PollTicker?) {
        guard state.withLock({ $0.rest?.mode == .motionEvents && !$0.stopped }) else { return }
        closeEvents()
        ticker?.pollAtRest()
        restOn(.adaptivePolling, because: deviceError(error, "read", DeviceError.eventsRefused))
    }

    /// Whether the capture still reads `buffer` (not stopped, not fallen back to polling).
    fileprivate func reads(_ buffer: ScanBuffer) -> Bool {
        state.withLock { !$0.stopped && $0.buffer === buffer }
    }

    /// The hysteresis trial's verdict: a hub that honours it rests so; one that ignores it is polled.
    fileprivate func hysteresisTried(_ result: Result<Void, DeviceError>) {
        eventLoop.preconditionInEventLoop()
        switch result {
        case .success: restOn(.hysteresis, because: nil)
        case .failure(let reason):
            guard keep({ $0.pollingReason = reason }) else { return }
            _ = follow(lifecycle { $0.pollInstead(because: reason) })
        }
    }

    /// Says how the capture now learns of a move, and why a better way was refused.
    private func restOn(_ mode: RestMode, because reason: DeviceError?) {
        guard keep({ $0.rest = (mode, reason) }) else { return }
        handler(.restModeChanged(mode, reason: reason))
    }

    /// Closes the events' channel and disables them.
    private func closeEvents() {
        let (channel, events) = state.withLock { state in
            defer { (state.eventsChannel, state.events) = (nil, nil) }
            return (state.eventsChannel, state.events)
        }
        close(channel)
        events?.close()
    }

    /// Stops reading and puts the device back; waits for an opening under way (not on the loop, where
    /// it could not finish: there, a device still being opened is closed by the opening itself).
    func stop() {
        let opening = state.withLock { state in
            state.stopped = true
            state.lifecycle.stop()
            return state.opening
        }
        if !eventLoop.inEventLoop { _ = try? opening?.wait() }
        closeReading()
        state.withLock { $0.polledThread }?.stop()
    }
}

/// Decodes what NIO reads from an IIO buffer's descriptor; the samples of each wake-up are followed
/// by one `readComplete`. A partial scan (only a socket standing in for the device splits one) waits
/// for the rest.
private final class ScanReader: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: runs on its channel's event loop only.
    typealias InboundIn = ByteBuffer

    private let buffer: ScanBuffer
    private let handler: @Sendable (SensorEvent) -> Void
    private var partial: ByteBuffer?
    private var rejections: RejectionReport
    /// Told of each read that brought scans (the lifecycle's `readSucceeded`).
    private let arrived: () -> Void

    init(buffer: ScanBuffer, handler: @escaping @Sendable (SensorEvent) -> Void, arrived: @escaping () -> Void) {
        self.buffer = buffer
        self.handler = handler
        self.arrived = arrived
        rejections = RejectionReport(device: buffer.device.number.sysname, kinds: buffer.kinds)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        let now = Syscall.monotonicNanoseconds()
        arrived()
        if var carried = partial {
            carried.writeBuffer(&bytes)
            bytes = carried
            partial = nil
        }
        let used = bytes.withUnsafeReadableBytes { raw in
            buffer.decode(raw, receivedAt: now) { handler(.sample($0)) }
        }
        bytes.moveReaderIndex(forwardBy: used)
        // Less than a scan waits for the rest; nothing more can be owed (a closed buffer has no scan size).
        if bytes.readableBytes > 0, bytes.readableBytes < buffer.scanSize { partial = bytes }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        rejections.report(total: buffer.rejectedReadings, to: handler)
        handler(.readComplete)
    }
}

/// The last handler of a capture's channel: an error, or the descriptor closing by itself, is the
/// capture's end (`LoopCapture.failed` tells a stop, and a vanished device, from a failure).
private final class ChannelEnd: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: runs on its channel's event loop only.
    typealias InboundIn = ByteBuffer

    private let failed: (any Error) -> Void

    init(_ failed: @escaping (any Error) -> Void) { self.failed = failed }

    func channelInactive(context: ChannelHandlerContext) { failed(ChannelError.eof) }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failed(error)
        context.close(promise: nil)
    }
}

/// Reads polled sensors each time their timer's descriptor becomes readable: one read per wake-up,
/// however many periods passed (a late loop skips, it does not burst). What a failed read means, and
/// when presence is checked, the capture's lifecycle says. An accelerometer that only event streams
/// read is polled more slowly while it lies still (`AdaptivePolling`), its timer set anew as it
/// starts and stops moving.
private final class PollTicker: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: runs on its channel's event loop only.
    typealias InboundIn = ByteBuffer

    private let poller: PolledSensors
    private weak var capture: LoopCapture?
    private let handler: @Sendable (SensorEvent) -> Void
    private var rejections: RejectionReport
    /// The timer's descriptor (the channel owns it), set once it is made.
    var timer: Int32 = -1
    private var adaptive: AdaptivePolling?
    /// The rate the timer runs at, Hz.
    private var timerRate: Double

    init(poller: PolledSensors, capture: LoopCapture) {
        self.poller = poller
        self.capture = capture
        handler = capture.handler
        rejections = RejectionReport(device: poller.device.number.sysname, kinds: poller.kinds)
        timerRate = poller.rate
        if capture.restsWhenStill, poller.kinds == [.accelerometer] { adaptive = AdaptivePolling(movingRate: poller.rate, heartbeat: capture.heartbeat) }
    }

    /// Follows the accelerometer's `sample` with the timer's rate, if it adapts; gives up motion
    /// events that let a move pass unannounced.
    private func adapt(to sample: SensorSample) {
        guard adaptive != nil, sample.kind == .accelerometer else { return }
        adaptive!.update(sample.vector, at: sample.timestamp)
        if let change = adaptive!.unannouncedChange {
            capture?.stopWaking(because: DeviceError.eventsSilent(device: poller.device.number.sysname, change: change), ticker: self)
        }
        retime()
    }

    /// Sets the timer to the rate the adaptive polling wants now, its first tick a period from now.
    private func retime() {
        guard let adaptive, adaptive.rate != timerRate, timer >= 0 else { return }
        // A timer that cannot be set keeps its rate and is tried again at the next change or event;
        // meanwhile the events read where the timer misses a tick (`AdaptivePolling.motionReported`).
        if case .success = Syscall.setTimerPeriod(timer, period: adaptive.period) { timerRate = adaptive.rate }
    }

    /// From now, the chip's motion events wake the capture: read now, for the reading later moves
    /// are measured from.
    func wakeOnEvents() {
        adaptive?.wakeOnEvents(true)
        poll()
    }

    /// The motion events are given up: polled slowly at rest from now (the reading under way goes on).
    func pollAtRest() {
        adaptive?.wakeOnEvents(false)
        retime()
    }

    /// The chip said it moved: fast until it is still again, and read now only where no read is due
    /// sooner (`AdaptivePolling.motionReported`).
    func motionReported() {
        guard adaptive?.motionReported(at: Syscall.monotonicNanoseconds()) == true else { return retime() }
        poll()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func channelReadComplete(context: ChannelHandlerContext) { poll() }

    /// Reads the sensors once and hands the samples on.
    private func poll() {
        guard let capture else { return }
        let poller = poller
        if case .end(let reason) = capture.lifecycle({ $0.pollDue(deviceExists: poller.deviceExists) }) { return capture.failed(reason) }
        do throws(DeviceError) {
            try poller.read { sample in
                adapt(to: sample)
                handler(.sample(sample))
            }
            capture.lifecycle { $0.readSucceeded() }
        } catch {
            switch capture.lifecycle({ $0.readFailed(error, deviceExists: poller.deviceExists) }) {
            case .proceed, .fallBackToPolling: break
            case .report(let problem): handler(.readFailed(problem))
            case .end(let reason): return capture.failed(reason)
            }
        }
        rejections.report(total: poller.rejectedReadings, to: handler)
        handler(.readComplete)
    }
}

/// Reads an accelerometer's motion events (`iio_event_data` records) and tells the poller of each
/// read that brought one of them, which reads at once only where no read is due sooner: the samples
/// themselves come from the poller's reads.
private final class MotionEventReader: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: runs on its channel's event loop only.
    typealias InboundIn = ByteBuffer

    private weak var ticker: PollTicker?
    private var moved = false

    init(ticker: PollTicker) { self.ticker = ticker }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        // Whole records only: the kernel hands out nothing less. Other devices' events cannot come here.
        bytes.withUnsafeReadableBytes { raw in
            var offset = 0
            while let record = IIOEventRecord(UnsafeRawBufferPointer(rebasing: raw[offset...])) {
                moved = moved || record.isAccelerometer
                offset += IIOEventRecord.size
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard moved else { return }
        moved = false
        ticker?.motionReported()
    }
}

/// Runs an `HysteresisTrial` on a resting accelerometer's buffer, on the loop: counts its reports,
/// raises the hub's sensitivity when the trial says, and tells the capture the verdict. The
/// sensitivity is written off the loop (a feature report to the hub), and put back when the hub
/// ignores it (else when the buffer closes).
private final class HysteresisProbe: @unchecked Sendable {
    // @unchecked: used on the capture's event loop only, but for the writes it sends off it.
    private weak var capture: LoopCapture?
    private let buffer: ScanBuffer
    private var trial: HysteresisTrial?

    init(capture: LoopCapture, buffer: ScanBuffer) {
        self.capture = capture
        self.buffer = buffer
    }

    /// Counts a report; the first starts the trial.
    func observe(_ sample: SensorSample) {
        guard sample.kind == .accelerometer else { return }
        if trial == nil {
            trial = HysteresisTrial(startingAt: Syscall.monotonicNanoseconds())
            schedule(at: trial!.phaseEnd)
        }
        trial?.report(sample.vector, at: Syscall.monotonicNanoseconds())
    }

    private func schedule(at t: Int64) {
        guard let loop = capture?.eventLoop else { return }
        loop.scheduleTask(in: .nanoseconds(max(0, t - Syscall.monotonicNanoseconds()))) { [self] in advance() }
    }

    private func advance() {
        guard let capture, trial != nil, capture.reads(buffer) else { return }
        switch trial!.step(at: Syscall.monotonicNanoseconds()) {
        case .wait(let t): schedule(at: t)
        case .raise(let t):
            write(HysteresisTrial.sensitivity, on: capture) { [self] error in
                if let error { return capture.hysteresisTried(.failure(error)) }
                schedule(at: t)
            }
        case .verdict(let honoured, let before, let after):
            trial = nil
            if honoured { return capture.hysteresisTried(.success(())) }
            let ignored = DeviceError.hysteresisIgnored(device: buffer.device.number.sysname, before: before, after: after)
            write(0, on: capture) { _ in capture.hysteresisTried(.failure(ignored)) }
        }
    }

    /// Sets the sensitivity off the loop, then calls `done` on it with the failure, if any.
    private func write(_ value: Double, on capture: LoopCapture, done: @escaping @Sendable (DeviceError?) -> Void) {
        let buffer = buffer
        NIOThreadPool.singleton.runIfActive(eventLoop: capture.eventLoop) { () throws -> Void in
            try buffer.setAccelerometerHysteresis(value)
        }.whenComplete { result in
            // Stopped while it wrote: the close has put the attributes back already, so this one too.
            guard capture.reads(buffer) else {
                NIOThreadPool.singleton.submit { _ in buffer.close() }
                return
            }
            if case .failure(let error) = result {
                done(error as? DeviceError ?? .attributeUnwritable(device: buffer.device.number.sysname, attribute: "in_accel_hysteresis", errno: ErrnoValue.invalidArgument))
            } else {
                done(nil)
            }
        }
    }
}
