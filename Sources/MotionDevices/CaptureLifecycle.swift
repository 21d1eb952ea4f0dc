import MotionSystem

/// The life of one capture as a value: the phase it is in, and what each thing that happens to it
/// makes it do. Both captures, the one a thread drives (`SensorCapture`) and the one the hub's event
/// loop drives (`LoopCapture`), only drive it: they open, read, wait and close, and ask it what
/// follows. Each rule is stated once, from `CapturePolicy`, and tested transition by transition
/// without a device (CaptureLifecycleTests).
///
///     opening(buffered) ──opened──▶ buffered ──no first scan, or open failed──▶ opening(polled)
///     opening(polled)   ──opened──▶ polled
///     any ──device gone, failuresThatEnd failed reads in a row, a polled open failed, the reading
///           ended by itself, stop──▶ ended
public struct CaptureLifecycle: Sendable, Equatable {
    public enum Phase: Sendable, Equatable {
        /// The device is being opened to be read in this mode.
        case opening(CaptureMode)
        case buffered
        case polled
        /// Over: nothing more is read, and nothing more is told.
        case ended
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
        /// Close, and tell the owner the capture is over (`SensorEvent.ended`).
        case end(DeviceError)
    }

    public private(set) var phase: Phase
    public let policy: CapturePolicy
    /// `iio:deviceN`, for the errors it makes.
    public let device: String
    private var failuresInARow = 0
    private var scanSeen = false
    private var scanSinceCheck = false
    private var readsSincePresenceCheck = 0

    /// A capture of `device` (`iio:deviceN`) that opens it first in `mode`, under `policy`.
    public init(device: String, policy: CapturePolicy, startingIn mode: CaptureMode) {
        self.device = device
        self.policy = policy
        phase = .opening(mode)
    }

    /// The device opened: reading begins in the mode it was opened in.
    public mutating func opened() {
        guard case .opening(let mode) = phase else { return }
        phase = mode == .buffered ? .buffered : .polled
        (failuresInARow, readsSincePresenceCheck) = (0, 0)
    }

    /// The device could not be opened. A buffer that cannot be had is polled instead; a device that
    /// cannot be polled either, or is gone, ends the capture.
    public mutating func openFailed(_ error: DeviceError, deviceExists: @autoclosure () -> Bool) -> Action {
        guard case .opening(let mode) = phase else { return .proceed }
        guard deviceExists() else { return end(.deviceVanished(device: device)) }
        guard mode == .buffered else { return end(error) }
        phase = .opening(.polled)
        return .fallBackToPolling(error)
    }

    /// A read gave what it had: the failures in a row are forgotten.
    public mutating func readSucceeded() {
        failuresInARow = 0
        scanSeen = true
        scanSinceCheck = true
    }

    /// A polled read is due: about `CapturePolicy.presenceChecksPerSecond` times a second the device's
    /// presence is checked first, as some drivers keep answering reads of a removed device's open files.
    public mutating func pollDue(deviceExists: @autoclosure () -> Bool) -> Action {
        guard phase == .polled else { return .proceed }
        readsSincePresenceCheck += 1
        guard readsSincePresenceCheck >= policy.readsPerPresenceCheck else { return .proceed }
        readsSincePresenceCheck = 0
        return deviceExists() ? .proceed : end(.deviceVanished(device: device))
    }

    /// A read failed. The device gone ends the capture; a buffer's wait that timed out before its
    /// first scan is a buffer that gives nothing (polled instead), after it a paused sensor (waited
    /// for); any other failure is told, and `CapturePolicy.failuresThatEnd` in a row end it.
    public mutating func readFailed(_ error: DeviceError, deviceExists: @autoclosure () -> Bool) -> Action {
        guard phase == .buffered || phase == .polled else { return .proceed }
        guard deviceExists() else { return end(.deviceVanished(device: device)) }
        if phase == .buffered, case .bufferFailed(_, _, let code) = error, code == ErrnoValue.timedOut {
            return scanSeen ? .proceed : fallBack(error)
        }
        failuresInARow += 1
        return failuresInARow >= CapturePolicy.failuresThatEnd ? end(error) : .report(error)
    }

    /// A buffer's check is due (`CapturePolicy.firstDataTimeout` after it opened, then every
    /// `checkInterval`): without a first scan it is polled instead; silent since the last check and
    /// its device gone, the capture ends (a removed device's buffer need not fail a read).
    public mutating func checkDue(deviceExists: @autoclosure () -> Bool) -> Action {
        guard phase == .buffered else { return .proceed }
        guard scanSeen else { return fallBack(.bufferFailed(device: device, operation: "first scan", errno: ErrnoValue.timedOut)) }
        defer { scanSinceCheck = false }
        return scanSinceCheck || deviceExists() ? .proceed : end(.deviceVanished(device: device))
    }

    /// The reading itself ended: its descriptor closed by itself, or failed in a way no retry mends.
    /// Over, as vanished if the device is gone.
    public mutating func readingEnded(_ error: DeviceError, deviceExists: @autoclosure () -> Bool) -> Action {
        guard phase != .ended else { return .proceed }
        return end(deviceExists() ? error : .deviceVanished(device: device))
    }

    /// The owner found a better reason to poll a buffer that reads (an HID hub that ignores its
    /// hysteresis, for an accelerometer only read for "did it move"): polled instead.
    public mutating func pollInstead(because reason: DeviceError) -> Action {
        guard phase == .buffered else { return .proceed }
        return fallBack(reason)
    }

    /// Stopped by its owner: over, and nothing more is told.
    public mutating func stop() { phase = .ended }

    private mutating func fallBack(_ reason: DeviceError) -> Action {
        phase = .opening(.polled)
        return .fallBackToPolling(reason)
    }

    private mutating func end(_ reason: DeviceError) -> Action {
        phase = .ended
        return .end(reason)
    }
}
