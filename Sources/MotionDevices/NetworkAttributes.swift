import MotionSystem

/// Another machine's IIO sysfs, through libiio's network backend (iiod serves it): attributes by
/// their sysfs file names (`in_accel_x_raw`, `sampling_frequency`), which libiio's channel and device
/// attributes map to. iiod serves only the attributes libiio lists, so the device layer reads a
/// remote device with the same names it reads a local one's files by.
///
/// Owns its context: used by one thread at a time (discovery, or the one capture it was made for).
final class NetworkAttributes: @unchecked Sendable {
    /// Where an attribute file is, in libiio's terms.
    private enum Place {
        case device(IIODevice, String)
        case channel(IIOChannel, String)
        /// `scan_elements/in_*_type`, which libiio keeps as the channel's data format.
        case scanType(IIOChannel)
    }

    /// The context's URI, `ip:host[:port]`.
    let uri: String
    let context: IIOContext
    /// Per device id, each attribute file's place.
    private var places: [String: [String: Place]] = [:]
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)

    /// Milliseconds an operation may take before the remote machine counts as gone.
    static let timeoutMilliseconds: UInt32 = 2000

    init(uri: String) throws(DeviceError) {
        self.uri = uri
        try RemoteContextPreflight(uri: uri).check()
        context = try IIOContext(uri: uri, timeoutMilliseconds: Self.timeoutMilliseconds)
        for device in context.devices {
            var files: [String: Place] = [:]
            for attribute in device.attributes { files[attribute] = .device(device, attribute) }
            for channel in device.channels {
                for attribute in channel.attributes {
                    if let file = channel.filename(ofAttribute: attribute) { files[file] = .channel(channel, attribute) }
                }
                if channel.isScanElement && !channel.isOutput { files["scan_elements/in_\(channel.id)_type"] = .scanType(channel) }
            }
            places[device.id] = files
        }
    }

    deinit { scratch.deallocate() }

    func read(device: String, attribute: String) -> Result<String, DeviceError> {
        guard let place = places[device]?[attribute] else {
            return .failure(.attributeUnreadable(device: device, attribute: attribute, errno: ErrnoValue.noSuchFile))
        }
        let read: Result<Int, Errno>
        switch place {
        case .device(let d, let name): read = d.read(attribute: name, into: scratch)
        case .channel(let c, let name): read = c.read(attribute: name, into: scratch)
        case .scanType(let channel): return .success(channel.scanTypeText)
        }
        switch read {
        case .failure(let e): return .failure(.attributeUnreadable(device: device, attribute: attribute, errno: e.rawValue))
        case .success(let count):
            // libiio's count includes the terminating NUL.
            let text = scratch.prefix(max(0, count)).prefix { $0 != 0 }
            return .success(String(decoding: text, as: UTF8.self))
        }
    }

    func write(device: String, attribute: String, value: String) -> Result<Void, DeviceError> {
        guard let place = places[device]?[attribute] else {
            return .failure(.attributeUnwritable(device: device, attribute: attribute, errno: ErrnoValue.noSuchFile))
        }
        let written: Result<Int, Errno>
        switch place {
        case .device(let d, let name): written = d.write(attribute: name, value: value)
        case .channel(let c, let name): written = c.write(attribute: name, value: value)
        case .scanType: written = .failure(Errno(rawValue: ErrnoValue.permissionDenied))  // read-only, as in sysfs
        }
        return written.map { _ in () }.mapError { .attributeUnwritable(device: device, attribute: attribute, errno: $0.rawValue) }
    }

    func exists(device: String, attribute: String) -> Bool { places[device]?[attribute] != nil }

    /// Whether the remote machine still answers for the device: a round trip (a read of its first
    /// attribute), not the context's snapshot.
    func deviceAnswers(_ device: String) -> Bool {
        guard let first = places[device]?.keys.min() else { return false }
        if case .success = read(device: device, attribute: first) { return true }
        return false
    }
}
