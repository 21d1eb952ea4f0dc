import MotionCore
import MotionSystem

/// Some sensors of a device read by polling sysfs: from the owner's event loop on a timer
/// (`makeTimer`), with no thread of the capture's, so that a reading costs the process one wake-up, at
/// low rates (an orientation every quarter second); or, at higher rates, on a thread of the capture's
/// (the hub's `ThreadPoller`), as a sysfs read can block for a bus transfer.
///
/// Sets the sampling frequency and a hysteresis of 0 as `SensorCapture` does, and puts them back at
/// `close()`.
public final class PolledSensors: @unchecked Sendable {
    // @unchecked: one thread at a time uses it: opened off the loop, then read on the loop, then
    // closed once reading has ended.
    /// The device read.
    public let device: DeviceDescriptor
    /// The sensors read.
    public let kinds: [SensorKind]
    /// The rate it is polled at, Hz.
    public let rate: Double
    /// What went wrong while setting up and did not stop the capture: for the log.
    public let problems: [DeviceError]

    private let reader: PolledReader
    private var restorer: AttributeRestorer
    private let sysfs: Sysfs
    /// `iio:deviceN`, made once: `read` runs at every tick.
    private let name: String

    /// Opens the value attributes of `kinds` on `device`, to be read at `rate` Hz. Blocks for the
    /// sysfs writes: call it off an event loop.
    public init(device: DeviceDescriptor, kinds: [SensorKind], rate: Double) throws(DeviceError) {
        // A rate no chip runs at is the caller's error (rates are brought into the range where they are parsed).
        guard PlausibleRate.hertz.contains(rate) else {
            throw .bufferFailed(device: device.number.sysname, operation: "poll at \(rate) Hz", errno: ErrnoValue.invalidArgument)
        }
        self.device = device
        self.kinds = kinds
        self.rate = rate
        name = device.number.sysname
        sysfs = Sysfs()
        restorer = AttributeRestorer(sysfs: sysfs, device: device.number.sysname)
        problems = SensorCapture.configure(device, kinds: kinds, rate: device.hardwareRate(for: rate), restorer: &restorer)
        do throws(DeviceError) {
            reader = try PolledReader(device: device, kinds: kinds, sysfs: sysfs)
        } catch {
            restorer.restoreAll()
            throw sysfs.deviceExists(device.number.sysname) ? error : .deviceVanished(device: device.number.sysname)
        }
    }

    deinit { close() }

    /// A descriptor that becomes readable once per period, for the owner's event loop.
    public func makeTimer() throws(DeviceError) -> OwnedDescriptor {
        do {
            return try Syscall.makePeriodicTimer(period: PlausibleRate.period(rate))
        } catch {
            throw .bufferFailed(device: device.number.sysname, operation: "timerfd", errno: error.rawValue)
        }
    }

    /// Reads every sensor once, stamped now (CLOCK_MONOTONIC), handing each sample to `emit`; what
    /// a failure means (a device gone, a glitch) is the owner's `CaptureLifecycle`'s to say.
    public func read(emit: (SensorSample) -> Void) throws(DeviceError) {
        try reader.read(timestamp: Syscall.monotonicNanoseconds(), emit: emit)
    }

    /// Whether the device is still there (a stat).
    public var deviceExists: Bool { sysfs.deviceExists(name) }

    /// Readings dropped so far as beyond what a sensor can measure.
    public var rejectedReadings: Int { reader.rejectedReadings }

    /// Closes the attributes and puts back what was changed (idempotent).
    public func close() {
        reader.close()
        restorer.restoreAll()
    }
}
