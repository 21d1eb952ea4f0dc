import CLibIIO
import MotionSystem

/// Owns a libiio local context: a snapshot of every IIO device, its channels and attributes.
/// Each open sensor owns its own context, so a hot-plugged device never invalidates another's.
final class IIOContext: @unchecked Sendable {
    // @unchecked: the pointer is used by one thread at a time (the owner of the capture or the
    // caller of discovery); libiio contexts are not shared.
    let pointer: OpaquePointer

    /// Creates a local context. libiio returns none (ENOENT) when there are no IIO devices at all.
    init() throws(DeviceError) {
        guard let ctx = iio_create_local_context() else {
            throw .contextUnavailable(errno: currentErrno())
        }
        pointer = ctx
    }

    /// Creates a context from a libiio URI (`ip:host[:port]`: iiod on another machine), with
    /// `timeout` milliseconds for each of its operations.
    init(uri: String, timeoutMilliseconds: UInt32) throws(DeviceError) {
        guard let ctx = iio_create_context_from_uri(uri) else {
            throw .networkContextUnavailable(uri: uri, errno: currentErrno())
        }
        pointer = ctx
        _ = iio_context_set_timeout(ctx, timeoutMilliseconds)
    }

    deinit { iio_context_destroy(pointer) }

    /// Sets the timeout of buffer refills, in milliseconds.
    func setTimeout(milliseconds: UInt32) {
        _ = iio_context_set_timeout(pointer, milliseconds)
    }

    /// The devices of the context, triggers included.
    var devices: [IIODevice] {
        (0..<iio_context_get_devices_count(pointer)).compactMap { i in
            iio_context_get_device(pointer, i).map { IIODevice(pointer: $0) }
        }
    }

    /// The device with the kernel name `iio:deviceN`, if the context has it.
    func device(sysname: String) -> IIODevice? {
        devices.first { $0.id == sysname }
    }
}

/// One device of an `IIOContext` (valid while the context lives).
struct IIODevice {
    let pointer: OpaquePointer

    /// The kernel name, `iio:deviceN` or `triggerN`.
    var id: String { String(cString: iio_device_get_id(pointer)) }
    /// The driver's `name` attribute (empty if none).
    var name: String { iio_device_get_name(pointer).map { String(cString: $0) } ?? "" }
    var isTrigger: Bool { iio_device_is_trigger(pointer) }

    /// The device's own attributes (`sampling_frequency`), by libiio's names.
    var attributes: [String] {
        (0..<iio_device_get_attrs_count(pointer)).compactMap { i in iio_device_get_attr(pointer, i).map { String(cString: $0) } }
    }

    /// `iio_device_attr_read`; the negative errno on failure.
    func read(attribute name: String, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        IIOChannel.result(iio_device_attr_read(pointer, name, buffer.baseAddress!.assumingMemoryBound(to: CChar.self), buffer.count))
    }

    /// `iio_device_attr_write`.
    func write(attribute name: String, value: String) -> Result<Int, Errno> {
        IIOChannel.result(iio_device_attr_write(pointer, name, value))
    }

    var channels: [IIOChannel] {
        (0..<iio_device_get_channels_count(pointer)).compactMap { i in
            iio_device_get_channel(pointer, i).map { IIOChannel(pointer: $0, device: self) }
        }
    }
}

/// One channel of an `IIODevice`.
struct IIOChannel {
    let pointer: OpaquePointer
    let device: IIODevice

    var id: String { String(cString: iio_channel_get_id(pointer)) }
    var type: iio_chan_type { iio_channel_get_type(pointer) }
    var modifier: iio_modifier { iio_channel_get_modifier(pointer) }
    var isOutput: Bool { iio_channel_is_output(pointer) }
    var isScanElement: Bool { iio_channel_is_scan_element(pointer) }
    var scanIndex: Int { iio_channel_get_index(pointer) }

    /// The channel's layout in a scan as the kernel spells it in `scan_elements/in_*_type`
    /// (`le:s16/16>>0`), from libiio's data format: how a network context tells it.
    var scanTypeText: String {
        let format = iio_channel_get_data_format(pointer)!.pointee
        return "\(format.is_be ? "be" : "le"):\(format.is_signed ? "s" : "u")\(format.bits)/\(format.length)>>\(format.shift)"
    }

    /// The sysfs file behind a channel attribute (`scale` → `in_accel_scale` or `in_accel_x_scale`),
    /// or `nil` if the channel has no such attribute.
    func filename(ofAttribute name: String) -> String? {
        guard let attr = iio_channel_find_attr(pointer, name) else { return nil }
        return iio_channel_attr_get_filename(pointer, attr).map { String(cString: $0) }
    }

    /// The channel's attributes, by libiio's names (`raw`, `scale`).
    var attributes: [String] {
        (0..<iio_channel_get_attrs_count(pointer)).compactMap { i in iio_channel_get_attr(pointer, i).map { String(cString: $0) } }
    }

    /// `iio_channel_attr_read`; the negative errno on failure.
    func read(attribute name: String, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        Self.result(iio_channel_attr_read(pointer, name, buffer.baseAddress!.assumingMemoryBound(to: CChar.self), buffer.count))
    }

    /// `iio_channel_attr_write`.
    func write(attribute name: String, value: String) -> Result<Int, Errno> {
        Self.result(iio_channel_attr_write(pointer, name, value))
    }

    /// libiio's attribute calls return a length, or a negative errno.
    static func result(_ value: Int) -> Result<Int, Errno> {
        value >= 0 ? .success(value) : .failure(Errno(rawValue: Int32(-value)))
    }

    /// Enables or disables the channel for the next buffer.
    func setEnabled(_ enabled: Bool) {
        if enabled { iio_channel_enable(pointer) } else { iio_channel_disable(pointer) }
    }
}


