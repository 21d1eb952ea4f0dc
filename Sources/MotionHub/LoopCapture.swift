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
/// Its one state is its `CaptureLifecycle`: the readers (`ScanReader`, `PollTicker`, `ThreadPoller`,
/// `MotionEventReader`, `HysteresisProbe`) read, report to it, and do what it answers (`follow`).
/// The device is opened off the loop (`Capture/CaptureOpening.swift`: libiio scans all of sysfs). A buffer that cannot be opened, or
/// gives no scan within `firstDataTimeout`, falls back to polling. A device is polled on the loop up
/// to the event streams' rate, else on a thread (a sysfs read can block for a bus transfer), whose
/// events go to the handler from that thread; all others go to it on the loop.
///
/// An accelerometer that only event streams read (`restsWhenStill`) sleeps while it lies still: its
/// chip's motion events wake it where the driver has them, else it is polled slowly at rest
/// (`AdaptivePolling`); an HID sensor hub's buffer rests if the hub honours its hysteresis.
final class LoopCapture: SensorStream, @unchecked Sendable {
    // @unchecked: the mutable state is behind `state`; `handler` is set once before anything runs.
    let device: DeviceDescriptor
    let kinds: [SensorKind]
    let rate: Double
    let eventLoop: any EventLoop
    /// Its rate, its batch (scans per read of a buffer: as many as `latency` lets wait), its timeouts.
    let policy: CapturePolicy
    private let state: Mutex<State>
    private(set) var handler: @Sendable (SensorEvent) -> Void = { _ in }

    private struct State {
        /// What follows what: the capture's phase, and every rule.
        var lifecycle: CaptureLifecycle
        /// What reads the device now, in the order opened (a poller's ticker before its motion events).
        var readers: [any CaptureReader] = []
        /// Settled once reading has begun or was given up: `stop` waits for it.
        var opening: EventLoopFuture<Void>
        /// Polling threads closed without waiting (the capture ended from their own thread): `stop`
        /// joins them, so that no thread still puts the device back once it returned.
        var ending: [ThreadPoller] = []
    }

    /// A capture of `kinds` of `device` at `rate` Hz (rounded up to what the device offers) on
    /// `eventLoop`, whose scans may wait up to `latency` seconds to be read together;
    /// `firstDataTimeout` in seconds (default `CapturePolicy`'s); `restsWhenStill`: only event streams
    /// read it; `heartbeat`: seconds between reads at rest while its motion events wake it.
    init(
        device: DeviceDescriptor, kinds: [SensorKind], rate: Double, latency: Double, eventLoop: any EventLoop, firstDataTimeout: Double? = nil,
        restsWhenStill: Bool = false, heartbeat: Double = AdaptivePolling.heartbeat
    ) {
        // A resting accelerometer is polled (a slow poll at rest, or its chip's motion events, cost
        // fewer wake-ups than a buffer's batches at the slowest rate it offers), except an HID
        // sensor hub's, whose buffer may fall silent at rest (`HysteresisTrial`).
        let rests = restsWhenStill && kinds == [.accelerometer]
        let triesHysteresis = rests && device.captureMode == .buffered && ScanBuffer.hasAccelerometerHysteresis(device)
        let startMode = rests && !triesHysteresis ? .polled : device.captureMode
        self.device = device
        self.kinds = kinds
        self.rate = device.captureRate(for: rate, in: startMode)
        self.eventLoop = eventLoop
        let batch = min(CapturePlan.largestBatch, max(1, Int(saturating: latency * self.rate)))
        policy = CapturePolicy(rate: self.rate, batch: batch, firstDataTimeout: firstDataTimeout)
        let lifecycle = CaptureLifecycle(
            device: device.number.sysname, policy: policy, startingIn: startMode, restsWhenStill: rests, heartbeat: heartbeat)
        state = Mutex(State(lifecycle: lifecycle, opening: eventLoop.makeSucceededVoidFuture()))
    }

    /// Whether a device polled at `rate` Hz is polled on the loop rather than on a thread: up to the
    /// event streams' rate (`CapturePlan.eventRate`).
    static func pollsOnLoop(rate: Double) -> Bool { rate <= CapturePlan.eventRate }

    /// Runs `body` on the capture's lifecycle (from the loop, the opening's thread or a polling thread).
    func lifecycle<Result>(_ body: (inout CaptureLifecycle) -> Result) -> Result {
        state.withLock { body(&$0.lifecycle) }
    }

    var readingMode: ReadingMode { ReadingMode(lifecycle { $0.mode }) }

    var restMode: (mode: RestMode, note: DeviceError?)? { lifecycle { $0.restMode } }

    /// Starts; `handler` gets every event (on the event loop, or a polling thread's on that thread),
    /// each read's samples followed by `readComplete`, none before this returns: the hub starts
    /// captures inside its replan, which an `ended` told at once would re-enter.
    func start(handler: @escaping @Sendable (SensorEvent) -> Void) {
        self.handler = handler
        open(in: lifecycle { $0.mode })
    }

    /// Opens the device to be read in `mode` (`Capture/CaptureOpening.swift`).
    private func open(in mode: CaptureMode) {
        opens(mode == .buffered ? openBuffer() : openPolling())
    }

    /// Keeps `opening` for `stop` to wait for, beside any under way: started off the loop, the first
    /// opening can fail, and its fallback's begin, before `start` gets here.
    func opens(_ opening: EventLoopFuture<Void>) {
        state.withLock { $0.opening = $0.opening.and(opening).map { _ in } }
    }

    /// Does what the lifecycle said.
    func follow(_ action: CaptureLifecycle.Action) {
        switch action {
        case .proceed: break
        case .report(let problem): handler(.readFailed(problem))
        case .fallBackToPolling(let reason): fallBackToPolling(because: reason)
        case .rest(let mode, let reason):
            if mode == .adaptivePolling { close { $0 is MotionEventReader } }
            state.withLock { $0.readers.lazy.compactMap { $0 as? PollTicker }.first }?.rest(on: mode)
            handler(.restModeChanged(mode, reason: reason))
        case .rearm(let reason, let attempt, let delay):
            handler(.rearming(reason, attempt: attempt, after: delay))
            rearm(after: delay)
        case .end(let reason):
            close { _ in true }
            handler(.ended(reason))
        }
    }

    /// Closes every reader off the loop, waiting for each (an old polling thread puts the device's
    /// attributes back as it ends, which must be done before the device is set up again; a buffer's
    /// disable or an HID hub's feature report is a bus transfer the loop must not wait for), then,
    /// `delay` seconds later, opens the device again as at start: every attribute the driver may have
    /// forgotten is written anew. `stop` waits for the closing.
    private func rearm(after delay: Double) {
        let closing = state.withLock { state in
            defer { state.readers = [] }
            return state.readers
        }
        for reader in closing where reader is ThreadPoller { reader.close(waiting: false) }  // no round more
        let closed = eventLoop.runOnThreadOfItsOwn(named: "re-arm \(device.number.sysname)") {
            for reader in closing.reversed() { reader.close(waiting: true) }
        }
        opens(closed.always { [weak self] _ in
            self?.eventLoop.scheduleTask(in: .nanoseconds(Int64(delay * 1e9))) { [weak self] in
                guard let self, let mode = lifecycle({ $0.reopen() }) else { return }
                open(in: mode)
            }
        })
    }

    /// Adds `reader` to those reading unless the capture is over (then closes it); returns whether it was added.
    func keep(_ reader: any CaptureReader) -> Bool {
        let kept = state.withLock { state in
            if !state.lifecycle.isOver { state.readers.append(reader) }
            return !state.lifecycle.isOver
        }
        if !kept { reader.close(waiting: false) }
        return kept
    }

    /// Polling threads closed without waiting and kept for `stop` to join (at most those not yet ended).
    var pollersEnding: Int { state.withLock { $0.ending.count } }

    /// Whether `reader` still reads for the capture.
    func reads(_ reader: any CaptureReader) -> Bool {
        state.withLock { $0.readers.contains { $0 === reader } }
    }

    /// Closes the readers `matching` (waiting for their channels and threads when `waiting`).
    func close(waiting: Bool = false, _ matching: (any CaptureReader) -> Bool) {
        let closing = state.withLock { state in
            defer { state.readers.removeAll(where: matching) }
            let closing = state.readers.filter(matching)
            // Those that ended by themselves are let go (with their eventfds): a dead sensor re-armed
            // every minute for days would otherwise keep one per re-arm until its stop.
            if !waiting { state.ending = state.ending.filter { !$0.hasEnded } + closing.compactMap { $0 as? ThreadPoller } }
            return closing
        }
        // The motion events before the ticker they wake, the ticker before its poller.
        for reader in closing.reversed() { reader.close(waiting: waiting) }
    }

    /// A reader's channel ended by itself (an error, or the descriptor closed): the capture ends, as
    /// unplugged if the device is gone; one closed for a fallback to polling is no end of the capture.
    func readingEnded(_ reader: any CaptureReader, error: any Error, deviceExists: @autoclosure () -> Bool) {
        guard reads(reader) else { return }
        follow(lifecycle { $0.readingEnded(deviceError(error, "read"), deviceExists: deviceExists()) })
    }

    /// `error` as a `DeviceError`: as it is if it is one, else `make`'s failure of `operation` on the
    /// device, with the errno NIO gives (else EINVAL).
    func deviceError(_ error: any Error, _ operation: String, _ make: (String, String, Int32) -> DeviceError = DeviceError.bufferFailed) -> DeviceError {
        error as? DeviceError ?? make(device.number.sysname, operation, (error as? IOError)?.errnoCode ?? ErrnoValue.invalidArgument)
    }

    // MARK: Stopping

    /// Stops reading and puts the device back; waits for an opening under way, and for a polling
    /// thread that ended the capture itself (not on the loop, where the opening could not finish:
    /// there, a device still being opened is closed by the opening itself).
    func stop() {
        let opening = state.withLock { state in
            state.lifecycle.stop()
            return state.opening
        }
        guard !eventLoop.inEventLoop else { return close { _ in true } }
        // An opening begun meanwhile (a fallback to polling) is waited for too.
        var waited = opening
        while true {
            _ = try? waited.wait()
            close(waiting: true) { _ in true }
            let now = state.withLock { $0.opening }
            if now === waited { break }
            waited = now
        }
        for poller in state.withLock({ state in defer { state.ending = [] }; return state.ending }) { poller.close(waiting: true) }
    }
}
