import MotionCore
import MotionSystem
import Synchronization

/// A device's IIO buffer, opened for an owner that reads it from its own event loop: no thread of
/// the capture's, so that a batch of scans costs the process one wake-up.
///
/// libiio enables the scan elements and the timestamp, sets the trigger and the clock, and lays the
/// scan out, as for `SensorCapture`; the buffer's `watermark` is set so that the descriptor becomes
/// readable once that many scans wait (where the driver has a hardware FIFO, the kernel programs it
/// from the same number). The owner polls `makeReadDescriptor()`, reads whole scans and hands the
/// bytes to `decode`. Everything changed on the device is put back by `close()`.
public final class ScanBuffer: @unchecked Sendable {
    // @unchecked: one thread at a time uses it: opened off the loop, then read on the loop, then
    // closed once reading has ended; but for the attributes, which a hysteresis write off the loop
    // and a close (a stop from any thread) change at once, and a lock guards.
    /// The device read.
    public let device: DeviceDescriptor
    /// The sensors read.
    public let kinds: [SensorKind]
    /// The rate the device was set to, Hz.
    public let rate: Double
    /// Scans that make the descriptor readable.
    public let watermark: Int
    /// Scans the kernel's buffer holds (`buffer/length`): `length(rate:watermark:)`.
    public let length: Int
    /// What went wrong while setting up and did not stop the capture (a rate the driver refused, a
    /// clock that could not be made monotonic): for the log.
    public let problems: [DeviceError]

    private let reader: BufferedReader
    private let restorer: Mutex<AttributeRestorer>
    private let sysfs: Sysfs

    /// Scans the kernel's buffer holds per watermark at the least (libiio's four kernel blocks): room
    /// for the owner to be late three times over, however long a batch is.
    public static let lengthPerWatermark = 4

    /// How late the owner may be, after the watermark woke it, without losing a scan, s, whatever the
    /// rate: a stalled loop or a busy machine (at 285 Hz four scans were 14 ms, and a loaded machine
    /// lost one of 12,857).
    public static let slack = 0.1

    /// Scans the kernel's buffer is given at `rate` Hz for reads every `watermark` scans: the
    /// watermark's and `slack` s more, in whole watermarks (libiio sizes it in refills), at least
    /// `lengthPerWatermark` of them. The watermark, and so the latency, is not changed by it: the
    /// kernel's ABI (Documentation/ABI/testing/sysfs-bus-iio) has `buffer/length` as the number of
    /// scans the buffer holds and `buffer/watermark` as the number poll waits for, two settings.
    public static func length(rate: Double, watermark: Int) -> Int {
        let watermark = max(1, watermark)
        // Less a nanosecond's worth, so that a slack of a whole number of scans is not rounded up by one.
        let scans = watermark + Int((rate * slack - 1e-9).rounded(.up))
        let refills = max(lengthPerWatermark, (scans + watermark - 1) / watermark)
        return refills * watermark
    }

    /// Opens the buffer of `device` for `kinds` at `rate` Hz (the lowest offered rate at least that),
    /// readable every `watermark` scans. Blocks for the sysfs writes and libiio's scan of the devices:
    /// call it off an event loop.
    public init(device: DeviceDescriptor, kinds: [SensorKind], rate: Double, watermark: Int = 1) throws(DeviceError) {
        for kind in kinds where device.sensor(kind) == nil {
            throw .kindUnavailable(device: device.number.sysname, kind: kind.rawValue)
        }
        self.device = device
        self.kinds = kinds
        self.rate = device.availableRates?.rate(atLeast: rate) ?? rate
        self.watermark = max(1, watermark)
        length = Self.length(rate: self.rate, watermark: self.watermark)
        sysfs = Sysfs()
        var restorer = AttributeRestorer(sysfs: sysfs, device: device.number.sysname)
        var problems = SensorCapture.configure(device, kinds: kinds, rate: self.rate, restorer: &restorer)
        do throws(DeviceError) {
            reader = try BufferedReader(
                device: device, kinds: kinds, rate: self.rate, samplesPerRefill: self.watermark, timeoutMilliseconds: 0, sysfs: sysfs,
                kernelBlocks: length / self.watermark)
        } catch {
            restorer.restoreAll()
            throw sysfs.deviceExists(device.number.sysname) ? error : .deviceVanished(device: device.number.sysname)
        }
        if let problem = reader.timestampProblem { problems.append(problem) }
        self.problems = problems
        self.restorer = Mutex(restorer)
    }

    deinit { close() }

    /// Bytes per scan: reads of the descriptor should ask for a multiple of it (the kernel rounds
    /// down to whole scans, and refuses less than one).
    public var scanSize: Int { reader.scanSize }

    /// A descriptor of the buffer of its own, for the owner's event loop.
    public func makeReadDescriptor() throws(DeviceError) -> OwnedDescriptor {
        guard let descriptor = reader.descriptor else {
            throw .bufferFailed(device: device.number.sysname, operation: "descriptor", errno: ErrnoValue.badDescriptor)
        }
        do {
            return try Syscall.duplicate(descriptor)
        } catch {
            throw .bufferFailed(device: device.number.sysname, operation: "dup", errno: error.rawValue)
        }
    }

    /// Decodes the whole scans at the start of `bytes`, read at `receivedAt` (ns, CLOCK_MONOTONIC:
    /// it stamps the scans where they carry no timestamp), handing each sample to `emit`. Returns the
    /// bytes used; a partial scan at the end is left for the next read. Allocates nothing.
    @discardableResult
    public func decode(_ bytes: UnsafeRawBufferPointer, receivedAt: Int64, emit: (SensorSample) -> Void) -> Int {
        reader.decode(bytes, receivedAt: receivedAt, emit: emit)
    }

    /// Readings dropped so far as beyond what a sensor can measure.
    public var rejectedReadings: Int { reader.rejectedReadings }

    /// Whether the device is still there (a failed read of a vanished device means it was unplugged).
    public var deviceExists: Bool { sysfs.deviceExists(device.number.sysname) }

    /// The accelerometer's change sensitivity attribute (`in_accel_hysteresis`), where the device
    /// has one: an HID sensor hub's.
    public var accelerometerHysteresis: String? {
        kinds.contains(.accelerometer) ? Self.accelerometerHysteresis(of: device.number.sysname, sysfs: sysfs) : nil
    }

    /// Whether `device` has an accelerometer whose change sensitivity can be set (an HID sensor hub's).
    public static func hasAccelerometerHysteresis(_ device: DeviceDescriptor) -> Bool {
        device.kinds.contains(.accelerometer) && accelerometerHysteresis(of: device.number.sysname, sysfs: Sysfs()) != nil
    }

    private static func accelerometerHysteresis(of device: String, sysfs: Sysfs) -> String? {
        SensorDrivers.driver(for: .accelerometer).hysteresisAttributes.first { !$0.hasSuffix("_relative") && sysfs.exists(device: device, attribute: $0) }
    }

    /// Sets the accelerometer's change sensitivity to `value` (m/s²; 0 reports every period), put
    /// back at `close()`. Blocks for the write (a feature report to the hub): call it off an event loop.
    public func setAccelerometerHysteresis(_ value: Double) throws(DeviceError) {
        guard let attribute = accelerometerHysteresis else { throw .kindUnavailable(device: device.number.sysname, kind: "accelerometer hysteresis") }
        try restorer.withLock { (restorer) throws(DeviceError) in try restorer.set(attribute, to: value == 0 ? "0" : String(value)) }
    }

    /// Disables the buffer and puts back every attribute changed (idempotent).
    public func close() {
        reader.close()
        restorer.withLock { $0.restoreAll() }
    }
}
