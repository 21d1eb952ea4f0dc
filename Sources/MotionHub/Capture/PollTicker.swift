import MotionCore
import MotionDevices
import MotionSystem
import NIOCore

/// Reads polled sensors each time their timer's descriptor becomes readable, on the loop: one read
/// per wake-up, however many periods passed (a late loop skips, it does not burst). What a failed
/// read means, and when presence is checked, the capture's lifecycle says. An accelerometer that
/// only event streams read is polled more slowly while it lies still (`AdaptivePolling`), its timer
/// set anew as it starts and stops moving, and as the lifecycle changes how it rests.
final class PollTicker: ChannelReader, @unchecked Sendable {
    // @unchecked: reads on its channel's event loop only; `close` touches only what is thread-safe.
    typealias InboundIn = ByteBuffer

    let poller: PolledSensors
    private(set) weak var capture: LoopCapture?
    let channel = ReadingChannel()
    private var rejections: RejectionReport
    /// The timer's descriptor, lent (the channel owns it), once made.
    private var timer: Int32 = -1
    private var adaptive: AdaptivePolling?
    /// The rate the timer runs at, Hz.
    private var timerRate: Double

    init(poller: PolledSensors, capture: LoopCapture) {
        self.poller = poller
        self.capture = capture
        rejections = RejectionReport(device: poller.device.number.sysname, kinds: poller.kinds)
        timerRate = poller.rate
        let (rests, heartbeat) = capture.lifecycle { ($0.restsWhenStill, $0.heartbeat) }
        if rests { adaptive = AdaptivePolling(movingRate: poller.rate, heartbeat: heartbeat) }
    }

    /// The timer that ticks the reads, for the channel.
    func makeTimer() throws(DeviceError) -> OwnedDescriptor {
        let made = try poller.makeTimer()
        timer = made.rawValue
        return made
    }

    /// Follows the accelerometer's `sample` with the timer's rate, if it adapts; reports motion events
    /// that let a move pass unannounced.
    private func adapt(to sample: SensorSample) {
        guard adaptive != nil, sample.kind == .accelerometer else { return }
        adaptive!.update(sample.vector, at: sample.timestamp)
        if let change = adaptive!.unannouncedChange, let capture {
            let silent = DeviceError.eventsSilent(device: poller.device.number.sysname, change: change)
            capture.follow(capture.lifecycle { $0.motionEventsFailed(silent) })
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

    /// The lifecycle's rest: woken by motion events from now (read now, for the reading later moves
    /// are measured from), or, the events given up, polled slowly at rest (the reading under way goes on).
    func rest(on mode: RestMode) {
        switch mode {
        case .motionEvents:
            adaptive?.wakeOnEvents(true)
            poll()
        case .adaptivePolling:
            guard adaptive?.wakesOnEvents == true else { return }
            adaptive?.wakeOnEvents(false)
            retime()
        case .hysteresis: break
        }
    }

    /// The chip said it moved: fast until it is still again, and read now only where no read is due
    /// sooner (`AdaptivePolling.motionReported`).
    func motionReported() {
        guard adaptive?.motionReported(at: Syscall.monotonicNanoseconds()) == true else { return retime() }
        poll()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func channelReadComplete(context: ChannelHandlerContext) { poll() }

    func channelEnded(_ error: any Error) {
        capture?.readingEnded(self, error: error, deviceExists: poller.deviceExists)
    }

    private func poll() {
        capture?.poll(poller, rejections: &rejections) { adapt(to: $0) }
    }

    func close(waiting: Bool) {
        channel.close(waiting: waiting)
        poller.close()
    }
}

extension LoopCapture {
    /// Reads `poller` once, as the lifecycle rules (the presence check, what a failure means), handing
    /// each sample to `observe` and then the handler, the samples followed by `readComplete`: a
    /// round of `PollTicker` on the loop, or of `ThreadPoller` on its thread.
    func poll(_ poller: PolledSensors, rejections: inout RejectionReport, observe: (SensorSample) -> Void) {
        // Presence is checked outside the lock (the loop takes it for STATUS, a polling thread for each round).
        if lifecycle({ $0.presenceCheckDue() }) {
            let exists = poller.deviceExists
            if case .end(let reason) = lifecycle({ $0.presenceChecked(exists: exists) }) { return follow(.end(reason)) }
        }
        do throws(DeviceError) {
            try poller.read { sample in
                observe(sample)
                handler(.sample(sample))
            }
            lifecycle { $0.readSucceeded() }
        } catch {
            let exists = poller.deviceExists
            let action = lifecycle { $0.readFailed(error, deviceExists: exists) }
            switch action {
            case .end, .rearm: return follow(action)
            case .report: follow(action)
            // A polled read neither falls back nor rests.
            case .proceed, .fallBackToPolling, .rest: break
            }
        }
        rejections.report(total: poller.rejectedReadings, to: handler)
        handler(.readComplete)
    }
}
