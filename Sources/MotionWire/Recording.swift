import FoundationEssentials
import MotionCore

/// A recording of raw sensor samples (docs/recording.md): one JSON header line naming the devices,
/// then one line per sample, `<stream> <timestamp> <values…>`, in the units of the wire:
///
///     accelerometer <ns> <x> <y> <z>      g, CoreMotion's sign (−1 on the up axis at rest)
///     gyroscope <ns> <x> <y> <z>          rad/s
///     magnetometer <ns> <x> <y> <z>       µT
///     proximity <ns> <value> <near>       raw reading; 1 near, 0 far
///     pressure <ns> <kPa>                 the `altitude` stream's sensor (version 1 files since protocol 1.5)
///
/// Numbers are written in their shortest form that reads back to the same `Double`, so a
/// recording read and written again is the same file, bit for bit. A recording may be gzip-compressed
/// (`gzip -9`: a quarter of the size), as the bundled one is.
public enum Recording {
    /// A pressure sensor's lines are named after the sensor (`pressure`), not its stream (`altitude`).
    static let pressureName = SensorKind.pressure.rawValue

    /// The header's `format` value.
    public static let format = "motiond-recording"
    /// The format version this code reads and writes.
    public static let version = 1

    /// The first line.
    public struct Header: Codable, Sendable, Hashable {
        public var format: String
        public var version: Int
        /// The devices recorded, as `DEVICES` describes them.
        public var devices: [DevicesReply.Device]
        /// Where the samples come from, and the credit line owed for them.
        public var source: String?

        public init(devices: [DevicesReply.Device], source: String? = nil) {
            self.format = Recording.format
            self.version = Recording.version
            self.devices = devices
            self.source = source
        }
    }

    /// One recorded sample.
    public struct Sample: Sendable, Hashable {
        /// `accelerometer`, `gyroscope`, `magnetometer`, `proximity`, or `altitude` for a pressure
        /// sensor's readings.
        public var stream: StreamKind
        /// ns, CLOCK_MONOTONIC of the recording machine.
        public var timestamp: Int64
        /// The reading in the wire's units (see `Recording`); proximity: `x` = the raw value;
        /// pressure: `x` in kPa.
        public var vector: Vector3
        /// Proximity only.
        public var near: Bool

        public init(stream: StreamKind, timestamp: Int64, vector: Vector3, near: Bool = false) {
            self.stream = stream
            self.timestamp = timestamp
            self.vector = vector
            self.near = near
        }
    }

    /// A recording that cannot be read: which line, and why.
    public struct ReadError: Error, CustomStringConvertible {
        public var path: String
        /// 1-based.
        public var line: Int
        public var reason: String
        public var description: String { "\(path):\(line): \(reason)" }
    }

    /// The header line, `\n` included.
    public static func line(for header: Header) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(header)) + [UInt8(ascii: "\n")]
    }

    /// A sample's line, `\n` included.
    public static func line(for sample: Sample) -> String {
        let v = sample.vector
        return switch sample.stream {
        case .proximity: "proximity \(sample.timestamp) \(v.x) \(sample.near ? 1 : 0)\n"
        case .altitude: "\(pressureName) \(sample.timestamp) \(v.x)\n"
        default: "\(sample.stream.rawValue) \(sample.timestamp) \(v.x) \(v.y) \(v.z)\n"
        }
    }

    /// Reads a whole recording, plain or gzip-compressed (told by its first bytes, not its name).
    public static func read(path: String) throws -> (header: Header, samples: [Sample]) {
        var bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw ReadError(path: path, line: 0, reason: "cannot read: \(error)")
        }
        if Gzip.isCompressed(bytes) {
            do {
                bytes = try Gzip.decompress(bytes)
            } catch {
                throw ReadError(path: path, line: 0, reason: "cannot decompress (gzip): \(error.reason)")
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ReadError(path: path, line: 0, reason: "not UTF-8 text")
        }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last == "" { lines.removeLast() }
        guard let first = lines.first else { throw ReadError(path: path, line: 1, reason: "empty file: no header") }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let header: Header
        do {
            header = try decoder.decode(Header.self, from: Data(first.utf8))
        } catch {
            throw ReadError(path: path, line: 1, reason: "the header is not a motiond recording header: \(error)")
        }
        guard header.format == format else { throw ReadError(path: path, line: 1, reason: "format \"\(header.format)\", expected \"\(format)\"") }
        guard header.version == version else { throw ReadError(path: path, line: 1, reason: "version \(header.version); this motiond reads version \(version)") }
        let recorded = Set(header.devices.flatMap(\.kinds).map(\.rawValue))
        var samples: [Sample] = []
        samples.reserveCapacity(lines.count - 1)
        for (index, line) in lines.enumerated().dropFirst() {
            guard let sample = parse(line) else {
                throw ReadError(path: path, line: index + 1, reason: "not a sample line: \"\(line.prefix(80))\"")
            }
            let kind = sample.stream == .altitude ? pressureName : sample.stream.rawValue
            guard recorded.contains(kind) else {
                throw ReadError(path: path, line: index + 1, reason: "a \(kind) sample, but no device in the header has one")
            }
            samples.append(sample)
        }
        return (header, samples)
    }

    static func parse(_ line: Substring) -> Sample? {
        let fields = line.split(separator: " ")
        if fields.first.map(String.init) == pressureName {
            guard fields.count == 3, let t = Int64(fields[1]), let kPa = Double(fields[2]), kPa.isFinite, kPa > 0 else { return nil }
            return Sample(stream: .altitude, timestamp: t, vector: Vector3(x: kPa, y: 0, z: 0))
        }
        guard fields.count >= 4, let stream = StreamKind(rawValue: String(fields[0])), let t = Int64(fields[1]) else { return nil }
        let numbers = fields.dropFirst(2).compactMap { Double($0) }
        guard numbers.count == fields.count - 2, numbers.allSatisfy(\.isFinite) else { return nil }
        // Raw sensor streams only, the pressure's under its own name above (light: not yet).
        switch stream.descriptor.rawSensor {
        case .accelerometer, .gyroscope, .magnetometer:
            guard numbers.count == 3 else { return nil }
            return Sample(stream: stream, timestamp: t, vector: Vector3(x: numbers[0], y: numbers[1], z: numbers[2]))
        case .proximity:
            guard numbers.count == 2, numbers[1] == 0 || numbers[1] == 1 else { return nil }
            return Sample(stream: stream, timestamp: t, vector: Vector3(x: numbers[0], y: 0, z: 0), near: numbers[1] == 1)
        default:
            return nil
        }
    }
}
