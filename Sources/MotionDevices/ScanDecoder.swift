import MotionCore

/// Decodes buffered scans: each enabled channel at its byte offset by its scan type, converted to
/// SI and rotated by the mount matrix, and the timestamp channel where there is one.
///
/// Made once per capture; decoding a scan allocates nothing.
public struct ScanDecoder {
    private struct Sensor {
        var converter: SampleConverter
        var offsets: [Int]
        var types: [ScanType]
    }

    private var sensors: [Sensor] = []
    private let timestamp: (offset: Int, type: ScanType)?

    /// Creates a decoder.
    ///
    /// - Parameters:
    ///   - device: the device the scans come from.
    ///   - layout: for each sensor decoded, the byte offsets of its channels (x, y, z) in a scan.
    ///   - timestampOffset: the byte offset of the timestamp in a scan, `nil` if it is not enabled.
    /// - Throws: `kindUnavailable` for a sensor the device lacks; `unsupportedScanType` for a channel
    ///   with no scan type.
    public init(device: DeviceDescriptor, layout: [(kind: SensorKind, offsets: [Int])], timestampOffset: Int?) throws(DeviceError) {
        for (kind, offsets) in layout {
            guard let sensor = device.sensor(kind) else {
                throw .kindUnavailable(device: device.number.sysname, kind: kind.rawValue)
            }
            var types: [ScanType] = []
            for channel in sensor.channels {
                guard let type = channel.scanType else {
                    throw .unsupportedScanType(device: device.number.sysname, attribute: "scan_elements/in_\(channel.id)_type", value: "")
                }
                types.append(type)
            }
            sensors.append(Sensor(converter: SampleConverter(sensor: sensor, device: device.number), offsets: offsets, types: types))
        }
        if let timestampOffset, let type = device.timestampScan?.scanType {
            timestamp = (timestampOffset, type)
        } else {
            timestamp = nil
        }
    }

    /// Readings dropped so far as beyond what a sensor can measure (`SensorKind.plausibleMagnitude`).
    public private(set) var rejectedReadings = 0

    /// Whether scans carry a hardware timestamp.
    public var hasTimestamp: Bool { timestamp != nil }

    /// Decodes one scan at `scan`, handing one sample per sensor to `emit`. `fallbackTimestamp` (ns,
    /// CLOCK_MONOTONIC) stamps the samples when the scans have no timestamp channel.
    @inline(__always)
    public mutating func decode(scan: UnsafeRawPointer, fallbackTimestamp: Int64, emit: (SensorSample) -> Void) {
        // The device's timestamp is taken as it is, any Int64 (a bit pattern: decoding never traps);
        // what consumes it saturates its arithmetic and treats a jump as a gap (MotionCore's
        // `TimestampArithmetic`).
        let time = timestamp.map { $0.type.decode(scan + $0.offset) } ?? fallbackTimestamp
        for s in sensors.indices {
            var raw = Vector3.zero
            for c in sensors[s].offsets.indices {
                raw[Axis(rawValue: c)!] = Double(sensors[s].types[c].decode(scan + sensors[s].offsets[c]))
            }
            if let sample = sensors[s].converter.sample(raw: raw, timestamp: time) {
                emit(sample)
            } else {
                rejectedReadings += 1
            }
        }
    }
}
