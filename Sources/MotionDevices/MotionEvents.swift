import MotionSystem

/// An accelerometer's own motion events (IIO events): the chip says when it moved, so an
/// accelerometer read only to know whether the screen turned can sleep until then instead of being
/// polled (rotation-and-posture.md).
///
/// Opening enables every motion event the driver names in `events/`, asks the character device
/// for the event descriptor (`IIO_GET_EVENT_FD_IOCTL`) and closes the character device again: it
/// can be open once only, and a buffer needs it. The driver's own threshold and period are kept
/// (their units are the chip's, which the ABI does not state). Closing disables what was enabled.
///
/// The device's event descriptor is handed out once (industrialio-event.c:205–206, Linux 6.12): a
/// chip's own functions on the same device (`ChipFunctions`: a bma400's steps) compete for it, and
/// whichever opens second does without (`eventsRefused`, EBUSY).
///
/// Whether events really come is known only at run time: drivers create the attributes even where
/// no interrupt line is wired (they request the IRQ only `if (irq > 0)`), so an owner must still
/// check now and then (`AdaptivePolling`'s heartbeat).
public final class MotionEvents: @unchecked Sendable {
    // @unchecked: opened off the loop, then used and closed on the loop only.
    /// `iio:deviceN`.
    public let device: String
    /// The `_en` attributes it enabled (`events/in_accel_x_roc_either_en`, …).
    public let enabled: [String]
    private var restorer: AttributeRestorer
    private var descriptor: OwnedDescriptor?

    /// The suffixes of motion events' enable attributes: a change of acceleration of either sign or
    /// rising above a threshold. Free fall (`mag_falling`), "no motion", taps and step changes are
    /// left out. Drivers: bmc150-accel `roc_either` per axis (`bmc150_accel_event`), kxcjk-1013
    /// `thresh_either` per axis (`kxcjk1013_event`), bmi323 and bma400 `mag_rising`, inv_mpu6050
    /// `roc_rising`, mma8452 `mag_rising` (transient), st_lsm6dsx and adxl367 `thresh`/
    /// `mag_referenced` rising (drivers/iio, Linux 6.12).
    static let motionSuffixes = [
        "_roc_either_en", "_roc_rising_en", "_thresh_either_en", "_thresh_rising_en", "_mag_either_en", "_mag_rising_en",
        "_thresh_adaptive_either_en", "_thresh_adaptive_rising_en", "_mag_adaptive_rising_en", "_mag_referenced_rising_en",
    ]

    /// Whether `name` (an entry of `events/`) enables an accelerometer's motion event: `in_accel`,
    /// an optional modifier (`_x`, `_x&y&z`), then a motion suffix.
    public static func isMotionEnable(_ name: String) -> Bool {
        guard name.hasPrefix("in_accel"), let suffix = motionSuffixes.first(where: { name.hasSuffix($0) }) else { return false }
        let modifier = name.dropFirst("in_accel".count).dropLast(suffix.count)
        return modifier.isEmpty || (modifier.first == "_" && !modifier.dropFirst().isEmpty && !modifier.dropFirst().contains("_"))
    }

    /// The motion events' enable attributes of `device` (`events/…_en`), sorted; none when it has no
    /// `events/` directory.
    static func enableAttributes(of device: String, sysfs: Sysfs) -> [String] {
        guard sysfs.network == nil, case .success(let names) = Syscall.directoryEntries("\(sysfs.deviceDirectory(device))/events") else { return [] }
        return names.filter(isMotionEnable).sorted().map { "events/\($0)" }
    }

    /// Enables `device`'s motion events and takes their descriptor. Blocks for sysfs writes and the
    /// character device: call it off an event loop.
    ///
    /// - Throws: `noMotionEvents` when the driver names none; `attributeUnwritable` when none could be
    ///   enabled (EACCES: the udev rule did not give the service's group the `events/` files);
    ///   `eventsRefused` when the character device or its ioctl failed (`ENODEV`: no event interface,
    ///   `EBUSY`: another process holds its events).
    public convenience init(device: DeviceDescriptor) throws(DeviceError) {
        try self.init(device: device.number.sysname, sysfs: Sysfs(), deviceNodeDirectory: "/dev")
    }

    init(device: String, sysfs: Sysfs, deviceNodeDirectory: String) throws(DeviceError) {
        self.device = device
        restorer = AttributeRestorer(sysfs: sysfs, device: device)
        let names = Self.enableAttributes(of: device, sysfs: sysfs)
        guard !names.isEmpty else { throw .noMotionEvents(device: device) }
        var enabled: [String] = []
        var firstFailure: DeviceError?
        for name in names {
            do throws(DeviceError) {
                try restorer.set(name, to: "1")
                enabled.append(name)
            } catch {
                firstFailure = firstFailure ?? error
            }
        }
        self.enabled = enabled
        if enabled.isEmpty, let firstFailure { throw firstFailure }
        do throws(DeviceError) {
            descriptor = try Self.eventDescriptor(of: device, deviceNodeDirectory: deviceNodeDirectory)
        } catch {
            restorer.restoreAll()
            throw error
        }
    }

    /// `device`'s IIO event descriptor: its character device opened, `IIO_GET_EVENT_FD_IOCTL` asked,
    /// the character device closed again (it can be open once only, and a buffer needs it). The kernel
    /// hands the descriptor out once at a time (`iio_event_getfd`: `EBUSY` while another holds it).
    ///
    /// - Throws: `eventsRefused` naming the open or the ioctl that failed.
    static func eventDescriptor(of device: String, deviceNodeDirectory: String) throws(DeviceError) -> OwnedDescriptor {
        let node = "\(deviceNodeDirectory)/\(device)"
        let character: OwnedDescriptor
        do {
            character = try Syscall.openReadOnly(node)
        } catch {
            throw .eventsRefused(device: device, operation: "open \(node)", errno: error.rawValue)
        }
        do {
            return try Syscall.iioEventDescriptor(character.rawValue)
        } catch {
            throw .eventsRefused(device: device, operation: "IIO_GET_EVENT_FD_IOCTL", errno: error.rawValue)
        }
    }

    deinit { close() }

    /// Hands the event descriptor to its reader (an event loop's channel); nil once taken.
    public func takeDescriptor() -> OwnedDescriptor? {
        descriptor.take()
    }

    /// Disables the events it enabled, and closes the descriptor if nobody took it (idempotent).
    public func close() {
        descriptor = nil
        restorer.restoreAll()
    }
}

/// One `struct iio_event_data` (include/uapi/linux/iio/events.h): the event's code, then its time
/// (ns), each 8 bytes in the host's order.
public struct IIOEventRecord: Sendable, Equatable {
    /// Bytes per record.
    public static let size = 16
    /// The event code: type, direction, modifier, channel type and channel, packed.
    public var id: UInt64
    /// When the driver saw it, ns (the device's clock, CLOCK_REALTIME unless its `current_timestamp_clock` says otherwise).
    public var timestamp: Int64

    /// The record at the start of `bytes` (nil: fewer than `size` bytes).
    public init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= Self.size else { return nil }
        id = bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)
        timestamp = bytes.loadUnaligned(fromByteOffset: 8, as: Int64.self)
    }

    /// The record of `id` at `timestamp`.
    public init(id: UInt64, timestamp: Int64) {
        self.id = id
        self.timestamp = timestamp
    }

    /// `IIO_EVENT_CODE_EXTRACT_CHAN_TYPE`: bits 32–39 (`enum iio_chan_type`, include/uapi/linux/iio/types.h).
    public var channelType: UInt8 { UInt8(truncatingIfNeeded: id >> 32) }
    /// `IIO_EVENT_CODE_EXTRACT_TYPE`: bits 56–63 (`enum iio_event_type`).
    public var type: UInt8 { UInt8(truncatingIfNeeded: id >> 56) }
    /// `IIO_EVENT_CODE_EXTRACT_DIR`: bits 48–54 (`enum iio_event_direction`).
    public var direction: UInt8 { UInt8(truncatingIfNeeded: id >> 48) & 0x7F }
    /// `IIO_EVENT_CODE_EXTRACT_MODIFIER`: bits 40–47 (`enum iio_modifier`).
    public var modifier: UInt8 { UInt8(truncatingIfNeeded: id >> 40) }

    /// `IIO_ACCEL` in `enum iio_chan_type`.
    public static let accelerometerChannelType: UInt8 = 3

    /// Whether it is an accelerometer's event (the only ones `MotionEvents` enables).
    public var isAccelerometer: Bool { channelType == Self.accelerometerChannelType }
}
