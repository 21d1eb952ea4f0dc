import MotionSystem

/// The life of one capture as a value, and its only state: the phase it is in, and what each thing
/// that happens to it makes it do. Both captures, the one a thread drives (`SensorCapture`) and the
/// one the hub's event loop drives (`LoopCapture`), only drive it: their readers open, read, wait and
/// close, report here, and do what it answers. How the capture reads (`mode`), how it rests
/// (`restMode`) and whether it is over follow from the phase. Each rule is stated once, from
/// `CapturePolicy`, and tested transition by transition without a device (CaptureLifecycleTests).
///
///     opening(buffered) ──opened──▶ buffered, or resting(hysteresisTrial) for a capture that rests
///     opening(polled)   ──opened──▶ polled
///     buffered ──no first scan, or open failed──▶ opening(polled)
///     resting(hysteresisTrial) ──honoured──▶ resting(hysteresis)
///                              ──not honoured──▶ opening(polled)
///     polled ──motion events armed──▶ resting(motionEvents)
///            ──motion events refused──▶ resting(adaptivePolling)
///     resting(motionEvents) ──events failed, or a move went unannounced──▶ resting(adaptivePolling)
///     buffered ──silent for a check, its device there──▶ recovering(silence)
///     any reading ──failuresThatEnd failed reads in a row, its device there──▶ recovering(failingReads)
///     opening(polled) after a re-arm ──open failed, its device there──▶ recovering (the same reason)
///     recovering ──its back-off waited (`RecoveryBackoff`)──▶ opening(the mode it started in)
///     any ──device gone, a first polled open failed, the reading ended by itself, stop──▶ ended
public struct CaptureLifecycle: Sendable, Equatable {
    public enum Phase: Sendable, Equatable {
        /// The device is being opened to be read in this mode.
        case opening(CaptureMode)
        case buffered
        /// Polled: where (the hub's loop, from a timer, or a thread of its own) is the driver's, fixed
        /// by the rate, as no rule here depends on it.
        case polled
        /// An accelerometer that only event streams read, learning of its moves this way.
        case resting(Rest)
        /// Closed while its device is there, to be opened again as at start once its back-off has
        /// waited (`RecoveryBackoff`): a sensor that stalled.
        case recovering(RecoveryReason)
        /// Over: nothing more is read, and nothing more is told.
        case ended
    }

    /// How a resting capture learns that its accelerometer moved.
    public enum Rest: Sendable, Equatable {
        /// An HID sensor hub's buffer is read while `HysteresisTrial` finds out whether it honours a
        /// raised hysteresis.
        case hysteresisTrial
        /// The hub honours it: its buffer, silent while still, is read.
        case hysteresis
        /// Polled, and woken by the chip's motion events (`MotionEvents`).
        case motionEvents
        /// Polled slowly at rest (`AdaptivePolling`); `because`: why a better way was refused or given up.
        case adaptivePolling(because: DeviceError?)
    }

    /// What the driver is to do.
    public enum Action: Sendable, Equatable {
        /// Go on reading.
        case proceed
        /// Tell the owner of this failed read (`SensorEvent.readFailed`), and go on reading.
        case report(DeviceError)
        /// Close the buffer, tell the owner (`captureModeChanged(.polled, reason:)`), and open the
        /// device to be polled.
        case fallBackToPolling(DeviceError)
        /// Tell the owner how the capture now learns of a move (`SensorEvent.restModeChanged`). Into
        /// adaptive polling from motion events: close the events, and poll slowly at rest.
        case rest(RestMode, reason: DeviceError?)
        /// Close, tell the owner (`SensorEvent.rearming`), and after `after` seconds open the device
        /// again as at start (`reopen`): its `attempt`th re-arm since it last read.
        case rearm(RecoveryReason, attempt: Int, after: Double)
        /// Close, and tell the owner the capture is over (`SensorEvent.ended`).
        case end(DeviceError)
    }

    public private(set) var phase: Phase
    public let policy: CapturePolicy
    /// `iio:deviceN`, for the errors it makes.
    public let device: String
    /// Whether only event streams read it: an accelerometer that rests while still.
    public let restsWhenStill: Bool
    /// Seconds between checks of a buffer at rest (`Rest.hysteresis`): each check is a wake-up.
    public let heartbeat: Double
    /// The mode it was reading in when it ended.
    private var lastMode: CaptureMode
    /// The mode it opened in first, which a re-arm opens in again.
    private let startMode: CaptureMode
    /// Re-arms since it last read for a while (`readsThatHeal` in a row): the back-off's step.
    private var attempts = 0
    /// Good reads in a row since the last failure or re-arm.
    private var goodReads = 0
    /// Why a resting buffer was given up for polling: the rest's reason, rather than the poller's own
    /// (a hub has no motion events).
    private var whyPolled: DeviceError?
    private var failuresInARow = 0
    private var scanSeen = false
    private var scanSinceCheck = false
    private var readsSincePresenceCheck = 0

    /// A capture of `device` (`iio:deviceN`) that opens it first in `mode`, under `policy`;
    /// `restsWhenStill`: only event streams read it; `heartbeat`: seconds between checks of a buffer at rest.
    public init(
        device: String, policy: CapturePolicy, startingIn mode: CaptureMode, restsWhenStill: Bool = false, heartbeat: Double = AdaptivePolling.heartbeat
    ) {
        self.device = device
        self.policy = policy
        self.restsWhenStill = restsWhenStill
        self.heartbeat = heartbeat
        phase = .opening(mode)
        lastMode = mode
        startMode = mode
    }

    // MARK: What follows from the phase

    /// The mode it reads in, or is opening in (once over, the last one).
    public var mode: CaptureMode {
        switch phase {
        case .opening(let mode): mode
        case .buffered, .resting(.hysteresisTrial), .resting(.hysteresis): .buffered
        case .polled, .resting(.motionEvents), .resting(.adaptivePolling): .polled
        case .recovering: startMode
        case .ended: lastMode
        }
    }

    /// How it learns of a move while it rests, and why a better way was refused (nil: it does not
    /// rest, or not yet: a trial or the motion events' opening is under way).
    public var restMode: (mode: RestMode, note: DeviceError?)? {
        switch phase {
        case .resting(.hysteresis): (.hysteresis, nil)
        case .resting(.motionEvents): (.motionEvents, nil)
        case .resting(.adaptivePolling(let reason)): (.adaptivePolling, reason)
        default: nil
        }
    }

    /// Whether it is over (ended or stopped).
    public var isOver: Bool { phase == .ended }

    /// Whether it reads now: open, neither opening, recovering nor over.
    public var isReading: Bool {
        switch phase {
        case .buffered, .polled, .resting: true
        case .opening, .recovering, .ended: false
        }
    }

    /// Whether it reads a buffer now.
    public var readsBuffer: Bool { isReading && mode == .buffered }

    /// Seconds from one check of a buffer to the next: a buffer silent at rest is checked once a heartbeat.
    public var checkDelay: Double { phase == .resting(.hysteresis) ? heartbeat : policy.checkInterval }

    // MARK: Opening

    /// The device opened: reading begins in the mode it was opened in.
    public mutating func opened() {
        guard case .opening(let mode) = phase else { return }
        switch mode {
        case .buffered: phase = restsWhenStill ? .resting(.hysteresisTrial) : .buffered
        case .polled: phase = .polled
        }
        (failuresInARow, readsSincePresenceCheck) = (0, 0)
    }

    /// The device could not be opened. A buffer that cannot be had is polled instead; a device that
    /// cannot be polled either, or is gone, ends the capture. `deviceExists`: checked by the caller
    /// before, outside whatever lock holds this value (for a remote device, an iiod round trip).
    /// A re-armed device that cannot be polled is re-armed again, after its back-off.
    public mutating func openFailed(_ error: DeviceError, deviceExists: Bool) -> Action {
        guard case .opening(let mode) = phase else { return .proceed }
        guard deviceExists else { return end(.deviceVanished(device: device)) }
        guard mode == .buffered else { return attempts > 0 ? rearm(recoveringFrom) : end(error) }
        return fallBack(error)
    }

    // MARK: Reading

    /// A read gave what it had: the failures in a row are forgotten, and after `readsThatHeal` in a row
    /// the re-arms too (one good read between failures does not start the back-off over: a sensor that
    /// gives one read per opening would be re-armed at once for ever).
    public mutating func readSucceeded() {
        failuresInARow = 0
        goodReads += 1
        if goodReads >= policy.readsThatHeal { attempts = 0 }
        scanSeen = true
        scanSinceCheck = true
    }

    /// A polled read is due: whether the device's presence is to be checked first, about
    /// `CapturePolicy.presenceChecksPerSecond` times a second, as some drivers keep answering reads of
    /// a removed device's open files. The check is the caller's, made outside whatever lock holds this
    /// value (a remote device's is an iiod round trip of up to 2 s), and told by `presenceChecked`.
    public mutating func presenceCheckDue() -> Bool {
        guard isReading, mode == .polled else { return false }
        readsSincePresenceCheck += 1
        guard readsSincePresenceCheck >= policy.readsPerPresenceCheck else { return false }
        readsSincePresenceCheck = 0
        return true
    }

    /// The presence check `presenceCheckDue` asked for found the device (`exists`) or not: gone, the
    /// capture ends (unless it ended meanwhile).
    public mutating func presenceChecked(exists: Bool) -> Action {
        guard !isOver, !exists else { return .proceed }
        return end(.deviceVanished(device: device))
    }

    /// A read failed. The device gone ends the capture; a buffer's wait that timed out before its
    /// first scan is a buffer that gives nothing (polled instead), after it a silence the checks
    /// judge (`checkDue`); any other failure is told, and `CapturePolicy.failuresThatEnd` in a row
    /// re-arm the device. `deviceExists`: checked by the caller before, outside whatever lock holds
    /// this value.
    public mutating func readFailed(_ error: DeviceError, deviceExists: Bool) -> Action {
        guard isReading else { return .proceed }
        guard deviceExists else { return end(.deviceVanished(device: device)) }
        if readsBuffer, case .bufferFailed(_, _, let code) = error, code == ErrnoValue.timedOut {
            return scanSeen ? .proceed : fallBack(error)
        }
        failuresInARow += 1
        goodReads = 0
        return failuresInARow >= CapturePolicy.failuresThatEnd ? rearm(.failingReads) : .report(error)
    }

    /// A buffer's check is due (`CapturePolicy.firstDataTimeout` after it opened, then every
    /// `checkDelay`): without a first scan it is polled instead; silent since the last check, the
    /// capture ends if its device is gone (a removed device's buffer need not fail a read), and is
    /// re-armed if it is there and reads without rest (a resting hub's buffer is silent by design).
    public mutating func checkDue(deviceExists: @autoclosure () -> Bool) -> Action {
        guard readsBuffer else { return .proceed }
        guard scanSeen else { return fallBack(.bufferFailed(device: device, operation: "first scan", errno: ErrnoValue.timedOut)) }
        defer { scanSinceCheck = false }
        guard !scanSinceCheck else {
            // A whole check interval with scans: the sensor reads again.
            attempts = 0
            return .proceed
        }
        guard deviceExists() else { return end(.deviceVanished(device: device)) }
        return phase == .buffered ? rearm(.silence) : .proceed
    }

    /// The reading itself ended: its descriptor closed by itself, or failed. Over, as vanished, if the
    /// device is gone; re-armed if it is there (a driver's read that failed may work once reopened).
    public mutating func readingEnded(_ error: DeviceError, deviceExists: @autoclosure () -> Bool) -> Action {
        guard isReading else { return .proceed }
        return deviceExists() ? rearm(.failingReads) : end(.deviceVanished(device: device))
    }

    // MARK: Resting

    /// The hysteresis trial found that the hub honours it: its buffer is read, silent while still.
    public mutating func hysteresisHonoured() -> Action {
        guard phase == .resting(.hysteresisTrial) else { return .proceed }
        phase = .resting(.hysteresis)
        return .rest(.hysteresis, reason: nil)
    }

    /// The hysteresis trial found that the hub ignores it, or could not raise it: polled instead, and
    /// `reason` is the rest's reason from now on.
    public mutating func hysteresisNotHonoured(because reason: DeviceError) -> Action {
        guard phase == .resting(.hysteresisTrial) else { return .proceed }
        whyPolled = reason
        return fallBack(reason)
    }

    /// The chip's motion events are armed: they wake the polled capture from now.
    public mutating func motionEventsArmed() -> Action {
        guard restsWhenStill, phase == .polled else { return .proceed }
        phase = .resting(.motionEvents)
        return .rest(.motionEvents, reason: nil)
    }

    /// The motion events could not be had (`noMotionEvents`, refused, unwritable): polled slowly at
    /// rest. A device without any, given up by a hysteresis trial, keeps the trial's reason.
    public mutating func motionEventsRefused(_ reason: DeviceError) -> Action {
        guard restsWhenStill, phase == .polled else { return .proceed }
        let shown = reason == .noMotionEvents(device: device) ? whyPolled ?? reason : reason
        phase = .resting(.adaptivePolling(because: shown))
        return .rest(.adaptivePolling, reason: shown)
    }

    /// The armed motion events failed, or a move came that none announced (`AdaptivePolling`'s
    /// `unannouncedChange`): they are given up, and the capture polls slowly at rest.
    public mutating func motionEventsFailed(_ reason: DeviceError) -> Action {
        guard phase == .resting(.motionEvents) else { return .proceed }
        phase = .resting(.adaptivePolling(because: reason))
        return .rest(.adaptivePolling, reason: reason)
    }

    // MARK: Recovering

    /// The back-off of a re-arm has waited: the device is opened again in the mode it started in
    /// (nil: stopped meanwhile, or not recovering).
    public mutating func reopen() -> CaptureMode? {
        guard case .recovering = phase else { return nil }
        phase = .opening(startMode)
        return startMode
    }

    /// Why the re-arm under way began (a reopening that fails again keeps it).
    private var recoveringFrom: RecoveryReason = .failingReads

    private mutating func rearm(_ reason: RecoveryReason) -> Action {
        attempts += 1
        recoveringFrom = reason
        (failuresInARow, goodReads, scanSeen, scanSinceCheck, readsSincePresenceCheck) = (0, 0, false, false, 0)
        phase = .recovering(reason)
        return .rearm(reason, attempt: attempts, after: RecoveryBackoff.delay(beforeAttempt: attempts))
    }

    // MARK: Ending

    /// Stopped by its owner: over, and nothing more is told.
    public mutating func stop() {
        lastMode = mode
        phase = .ended
    }

    private mutating func fallBack(_ reason: DeviceError) -> Action {
        phase = .opening(.polled)
        return .fallBackToPolling(reason)
    }

    private mutating func end(_ reason: DeviceError) -> Action {
        stop()
        return .end(reason)
    }
}
