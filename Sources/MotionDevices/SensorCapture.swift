import MotionCore
import Synchronization
import MotionSystem

/// What a capture reports: samples, and the few things that happen to a sensor.
public enum SensorEvent: Sendable {
    /// A reading.
    case sample(SensorSample)
    /// Every sample of one read (a buffered refill, a polled round, a replayed instant) has been
    /// reported; the capture now waits for the device. A consumer that hands samples to another
    /// thread can wake it once here rather than once per sample.
    case readComplete
    /// The capture switched mode (buffered capture could not start, or gave no data in time).
    case captureModeChanged(CaptureMode, reason: DeviceError)
    /// An accelerometer that only event streams read now learns of its moves this way; `reason`
    /// says why a better way was refused or given up (nil: none was).
    case restModeChanged(RestMode, reason: DeviceError?)
    /// One reading failed; the capture goes on.
    case readFailed(DeviceError)
    /// The capture closed its device and opens it again in `after` seconds, as at start, though the
    /// device is there (its `attempt`th re-arm since it last read): `reason` says why.
    case rearming(RecoveryReason, attempt: Int, after: Double)
    /// The capture is over: the device vanished (`deviceVanished`) or could not be opened. Nothing follows.
    case ended(DeviceError)
}

/// Reads some sensors of one device at a rate, on a thread of its own, until stopped or until the
/// device goes away: another machine's devices (iiod) for the hub, and any device for a tool
/// (motion-probe); the hub reads this machine's through its event loop's capture (`LoopCapture`).
///
/// Buffered capture is tried first where the device offers it; if it cannot start, or no data comes
/// within `firstDataTimeout`, the capture falls back to polling sysfs and says so. The device's
/// `sampling_frequency` is set to the lowest offered rate at least the one asked for; a device polled
/// from the start is read at the rate asked for (`DeviceDescriptor.captureRate`). Everything the
/// capture changes on the device is put back when it ends.
public final class SensorCapture: Sendable {
    /// The device read.
    public let device: DeviceDescriptor
    /// The sensors read.
    public let kinds: [SensorKind]
    /// The rate samples come at, Hz: the device's for a buffer, the poll's otherwise.
    public let rate: Double

    private let sysfs: Sysfs
    private let policy: CapturePolicy
    private let state: Mutex<State>
    private let thread: WakeableThread

    private struct State: ~Copyable {
        /// The capture's one state: its mode, and whether it is over (stopped or ended), follow from it.
        var lifecycle: CaptureLifecycle
        var cancelBuffered: CancelHandle?
    }

    /// Prepares a capture of `kinds` on `device` at `rate` Hz.
    ///
    /// - Parameters:
    ///   - mode: the mode to try first; `nil` takes the device's own preference.
    ///   - firstDataTimeout: seconds a buffered capture may go without its first scan before it falls
    ///     back to polling; default `CapturePolicy`'s.
    public convenience init(
        device: DeviceDescriptor, kinds: [SensorKind], rate: Double, mode: CaptureMode? = nil,
        firstDataTimeout: Double? = nil
    ) throws(DeviceError) {
        try self.init(device: device, kinds: kinds, rate: rate, mode: mode, remote: false, firstDataTimeout: firstDataTimeout, sysfs: Sysfs())
    }

    /// A capture of a device on another machine, through iiod (`NetworkDiscovery`): its buffer
    /// streamed where it has one, else polled, each reading a round trip per channel.
    convenience init(remote device: DeviceDescriptor, kinds: [SensorKind], rate: Double, attributes: NetworkAttributes) throws(DeviceError) {
        try self.init(
            device: device, kinds: kinds, rate: rate, mode: nil, remote: true, firstDataTimeout: nil, sysfs: Sysfs(network: attributes))
    }

    private init(
        device: DeviceDescriptor, kinds: [SensorKind], rate: Double, mode: CaptureMode?, remote: Bool, firstDataTimeout: Double?, sysfs: Sysfs
    ) throws(DeviceError) {
        for kind in kinds where device.sensor(kind) == nil {
            throw .kindUnavailable(device: device.number.sysname, kind: kind.rawValue)
        }
        self.device = device
        self.kinds = kinds
        self.rate = device.captureRate(for: rate, in: mode ?? device.captureMode)
        self.sysfs = sysfs
        // Up to 1 kHz, one scan per refill keeps latency at one sample period.
        policy = CapturePolicy(rate: self.rate, batch: Int(saturating: self.rate / 1000), remote: remote, firstDataTimeout: firstDataTimeout)
        do {
            thread = try WakeableThread(name: device.number.sysname)
        } catch {
            throw .bufferFailed(device: device.number.sysname, operation: "eventfd", errno: error.rawValue)
        }
        state = Mutex(State(lifecycle: CaptureLifecycle(device: device.number.sysname, policy: policy, startingIn: mode ?? device.captureMode)))
    }

    deinit {
        stop()
    }

    /// The mode the capture is reading in now.
    public var mode: CaptureMode { lifecycle { $0.mode } }

    /// Runs `body` on the capture's lifecycle.
    private func lifecycle<Result>(_ body: (inout CaptureLifecycle) -> Result) -> Result {
        state.withLock { body(&$0.lifecycle) }
    }

    /// Starts reading; `handler` gets every event, on the capture's thread, in order.
    /// The per-sample path (read, decode, convert, call) allocates nothing.
    public func start(handler: @escaping @Sendable (SensorEvent) -> Void) {
        if let failure = thread.start({ [self] in run(handler) }) {
            handler(.ended(.bufferFailed(device: device.number.sysname, operation: "start a reader thread", errno: failure.rawValue)))
        }
    }

    /// The events as an asynchronous sequence; the capture starts now and stops when the sequence
    /// is dropped. A consumer that falls behind loses the oldest events beyond `bufferingNewest`.
    public func events(bufferingNewest limit: Int = 4096) -> AsyncStream<SensorEvent> {
        let (stream, continuation) = AsyncStream<SensorEvent>.makeStream(bufferingPolicy: .bufferingNewest(limit))
        continuation.onTermination = { [self] _ in requestStop() }
        start { event in
            continuation.yield(event)
            if case .ended = event { continuation.finish() }
        }
        return stream
    }

    /// Stops reading, waits for the thread to end and the device's attributes to be put back.
    /// If nobody is in `stop()` as the thread ends (the device went away, or only `requestStop` ran),
    /// the thread frees itself, and the capture (which its body holds) goes when its owner lets it go.
    public func stop() {
        requestStop()
        thread.stop()
    }

    private func requestStop() {
        // Cancel under the lock: the capture thread clears the handle under it before destroying the buffer.
        state.withLock { state in
            state.lifecycle.stop()
            state.cancelBuffered?.cancel()
        }
        thread.requestStop()
    }

    /// Whether the capture is over: stopped, or ended by what it read.
    private var stopRequested: Bool { lifecycle { $0.isOver } }

    // MARK: - The capture thread

    private func run(_ handler: @Sendable (SensorEvent) -> Void) {
        var restorer = AttributeRestorer(sysfs: sysfs, device: device.number.sysname)
        for problem in Self.configure(device, kinds: kinds, rate: device.hardwareRate(for: rate), restorer: &restorer) { handler(.readFailed(problem)) }
        defer { restorer.restoreAll() }

        var reading = mode
        while true {
            switch reading == .buffered ? runBuffered(handler) : runPolled(handler) {
            case .proceed, .report, .rest: return  // stopped (a thread's capture has no rest)
            case .end(let error): return handler(.ended(error))
            case .fallBackToPolling(let reason):
                handler(.captureModeChanged(.polled, reason: reason))
                reading = .polled
            case .rearm(let reason, let attempt, let delay):
                handler(.rearming(reason, attempt: attempt, after: delay))
                thread.sleep(untilMonotonic: Syscall.monotonicNanoseconds() + Int64(delay * 1e9))
                guard let reopened = lifecycle({ $0.reopen() }) else { return }
                // As at start: what the driver may have forgotten is written again.
                for problem in Self.configure(device, kinds: kinds, rate: device.hardwareRate(for: rate), restorer: &restorer) {
                    handler(.readFailed(problem))
                }
                reading = reopened
            }
        }
    }

    /// Sets what every capture of `device` needs, remembering the old values in `restorer`: the
    /// sampling frequency, and a hysteresis of 0. Returns what could not be set (not fatal).
    static func configure(_ device: DeviceDescriptor, kinds: [SensorKind], rate: Double, restorer: inout AttributeRestorer) -> [DeviceError] {
        let name = device.number.sysname
        var problems: [DeviceError] = []
        if let attribute = device.samplingFrequencyAttribute {
            do throws(DeviceError) {
                try restorer.set(attribute, to: format(rate))
            } catch {
                problems.append(error)
            }
        }
        // An HID sensor hub reports a sample only when it differs from the last by more than its
        // hysteresis, so a device at rest goes silent: no rest detection, no gyroscope bias, no
        // rate. While captured, the threshold is 0 and the hub reports every period.
        for kind in kinds where kind.isVector {
            for attribute in SensorDrivers.driver(for: kind).hysteresisAttributes {
                guard let value = try? restorer.sysfs.readIfPresent(device: name, attribute: attribute).get(),
                    Double(value.trimmingWhitespace) != 0
                else { continue }
                do throws(DeviceError) {
                    try restorer.set(attribute, to: "0")
                } catch {
                    problems.append(error)
                }
            }
        }
        return problems
    }

    /// Reads the buffer until stopped (`.proceed`) or until the lifecycle says otherwise.
    private func runBuffered(_ handler: @Sendable (SensorEvent) -> Void) -> CaptureLifecycle.Action {
        let name = device.number.sysname
        let reader: BufferedReader
        do {
            reader = try BufferedReader(
                device: device, kinds: kinds, rate: rate, samplesPerRefill: policy.batch,
                timeoutMilliseconds: UInt32(saturating: policy.firstDataTimeout * 1000), sysfs: sysfs)
        } catch {
            let exists = sysfs.deviceExists(name)
            return lifecycle { $0.openFailed(error, deviceExists: exists) }
        }
        defer { reader.close() }
        lifecycle { $0.opened() }
        // Not fatal: the scans are stamped on arrival instead. Said once, as a failed read.
        if let problem = reader.timestampProblem { handler(.readFailed(problem)) }
        let stoppedEarly = state.withLock { state in
            state.cancelBuffered = CancelHandle(reader)
            return state.lifecycle.isOver
        }
        defer { state.withLock { $0.cancelBuffered = nil } }
        if stoppedEarly { return .proceed }

        var rejections = RejectionReport(device: name, kinds: kinds)
        while !stopRequested {
            do throws(DeviceError) {
                try reader.read { handler(.sample($0)) }
                lifecycle { $0.readSucceeded() }
                rejections.report(total: reader.rejectedReadings, to: handler)
                handler(.readComplete)
            } catch {
                if stopRequested { return .proceed }
                let exists = sysfs.deviceExists(name)
                switch lifecycle({ $0.readFailed(error, deviceExists: exists) }) {
                case .proceed: continue
                case .report(let problem): handler(.readFailed(problem))
                case let outcome: return outcome
                }
            }
        }
        return .proceed
    }

    /// Polls the sensors every period until stopped (`.proceed`) or until the lifecycle says otherwise.
    private func runPolled(_ handler: @Sendable (SensorEvent) -> Void) -> CaptureLifecycle.Action {
        let name = device.number.sysname
        let reader: PolledReader
        do {
            reader = try PolledReader(device: device, kinds: kinds, sysfs: sysfs)
        } catch {
            let exists = sysfs.deviceExists(name)
            return lifecycle { $0.openFailed(error, deviceExists: exists) }
        }
        lifecycle { $0.opened() }
        let period = PlausibleRate.period(rate)
        var deadline = Syscall.monotonicNanoseconds()
        var rejections = RejectionReport(device: name, kinds: kinds)
        while !stopRequested {
            // Presence is checked outside the lock the loop takes too (`mode`): a remote check can take 2 s.
            if lifecycle({ $0.presenceCheckDue() }) {
                let exists = sysfs.deviceExists(name)
                if case .end(let reason) = lifecycle({ $0.presenceChecked(exists: exists) }) { return .end(reason) }
            }
            do throws(DeviceError) {
                try reader.read(timestamp: Syscall.monotonicNanoseconds()) { handler(.sample($0)) }
                lifecycle { $0.readSucceeded() }
                rejections.report(total: reader.rejectedReadings, to: handler)
                handler(.readComplete)
            } catch {
                let exists = sysfs.deviceExists(name)
                switch lifecycle({ $0.readFailed(error, deviceExists: exists) }) {
                case .proceed: break
                case .report(let problem): handler(.readFailed(problem))
                case let outcome: return outcome
                }
            }
            deadline += period
            let now = Syscall.monotonicNanoseconds()
            if deadline < now { deadline = now }  // fell behind: skip, don't burst
            thread.sleep(untilMonotonic: deadline)
        }
        return .proceed
    }

    /// A rate as sysfs expects it: `100`, `12.5`.
    static func format(_ rate: Double) -> String {
        rate == rate.rounded() && abs(rate) < 1e15 ? String(Int64(rate)) : String(rate)
    }
}

/// Lets another thread cancel a blocked buffer refill (libiio's `iio_buffer_cancel` is thread-safe).
private final class CancelHandle: @unchecked Sendable {
    private let reader: BufferedReader
    init(_ reader: BufferedReader) { self.reader = reader }
    func cancel() { reader.cancel() }
}
