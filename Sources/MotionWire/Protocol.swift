import MotionCore

/// The version of the protocol this code speaks (docs/protocol.md).
public enum ProtocolVersion {
    /// Incompatible changes change the major version.
    public static let major = 1
    /// Additions change the minor version.
    public static let minor = 6
    /// The longest request line the daemon reads, bytes, `\n` included.
    public static let maximumLineLength = 4096
}

/// The streams a client can watch or poll.
public enum StreamKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// Fused device motion.
    case motion
    /// Raw acceleration, g, CoreMotion's sign.
    case accelerometer
    /// Raw rotation rate, rad/s.
    case gyroscope
    /// Raw magnetic field, µT.
    case magnetometer
    /// Near/far events.
    case proximity
    /// Ambient light events (protocol 1.2).
    case light
    /// Screen orientation events.
    case orientation
    /// Screen tilt events.
    case tilt
    /// A 2-in-1's hinge angle and mode.
    case hinge
    /// Steps, distance, cadence and pace (protocol 1.4).
    case pedometer
    /// The motion activity: stationary, walking, running, unknown (protocol 1.4).
    case activity
    /// Pressure and the altitude it means (protocol 1.5).
    case altitude
    /// Shake, pick-up and significant-motion events (protocol 1.5).
    case gesture

    /// The stream's place in `allCases`, for tables indexed by stream.
    public var index: Int {
        switch self {
        case .motion: 0
        case .accelerometer: 1
        case .gyroscope: 2
        case .magnetometer: 3
        case .proximity: 4
        case .light: 5
        case .orientation: 6
        case .tilt: 7
        case .hinge: 8
        case .pedometer: 9
        case .activity: 10
        case .altitude: 11
        case .gesture: 12
        }
    }

    /// Decodes a stream's name; one that is no stream is refused naming it and the streams there are
    /// (Swift's own message names the type, not the choices, and shows `""` as nothing at all).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let name = try container.decode(String.self)
        guard let kind = StreamKind(rawValue: name) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "\"\(name.prefix(40))\" is not a stream; streams are \(Self.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self = kind
    }
}

/// The stream table: what each stream needs of the sensors and how they are sampled for it, in one
/// place. A new stream adds its case, its `index` and its entry here; its message lives in
/// Messages.swift and its values come from the hub's stage that makes them.
extension StreamKind {
    /// How a stream's sensors are sampled.
    public enum Sampling: Sendable, Hashable {
        /// At the interval its client asks for: a periodic stream.
        case asked
        /// At the event rate, each reading sent fresh: state at start, then each change.
        case events
        /// At the step detector's rate, read in batches (its counts are seconds late anyway).
        case gait
        /// Moments, not states (gestures): at the step detector's rate (a shake's swings need it), each
        /// reading sent fresh; a new watcher gets nothing first.
        case moments
    }

    /// One stream's entry in the table.
    public struct Descriptor: Sendable {
        /// The sensors it cannot go without.
        public var required: Set<SensorKind>
        /// The sensors it uses where the machine has them.
        public var optional: Set<SensorKind> = []
        public var sampling: Sampling
        /// The sensor whose readings it carries as they are (what a recording holds), if it does.
        public var rawSensor: SensorKind?
    }

    /// The stream's entry.
    public var descriptor: Descriptor { Self.table[index] }

    /// Whether the stream is an event stream (state at start, then each change) rather than periodic.
    public var isEventStream: Bool { descriptor.sampling != .asked }

    /// Whether a new watcher gets the stream's state first: an event stream's, except a moment's.
    public var startsWithState: Bool { isEventStream && descriptor.sampling != .moments }

    private static let table = allCases.map(\.entry)

    private var entry: Descriptor {
        switch self {
        // A sensor hub's own compass gives the heading only where no magnetometer does (CapturePlan).
        case .motion: Descriptor(required: [.accelerometer], optional: [.gyroscope, .magnetometer, .compass], sampling: .asked)
        case .accelerometer: Descriptor(required: [.accelerometer], sampling: .asked, rawSensor: .accelerometer)
        case .gyroscope: Descriptor(required: [.gyroscope], sampling: .asked, rawSensor: .gyroscope)
        case .magnetometer: Descriptor(required: [.magnetometer], sampling: .asked, rawSensor: .magnetometer)
        case .proximity: Descriptor(required: [.proximity], sampling: .events, rawSensor: .proximity)
        case .light: Descriptor(required: [.light], sampling: .events)
        case .orientation, .tilt: Descriptor(required: [.accelerometer], sampling: .events)
        case .hinge: Descriptor(required: [.accelerometer], sampling: .asked)
        case .pedometer: Descriptor(required: [.accelerometer], optional: [.pressure], sampling: .gait)
        case .activity: Descriptor(required: [.accelerometer], sampling: .gait)
        case .altitude: Descriptor(required: [.pressure], sampling: .asked, rawSensor: .pressure)
        case .gesture: Descriptor(required: [.accelerometer], sampling: .moments)
        }
    }
}

/// A request's `id`: any JSON number or string, copied into the reply.
public enum RequestID: Sendable, Hashable, Codable {
    /// An integer id, kept exactly (all of Int64, not only the 2^53 a Double holds).
    case integer(Int64)
    /// Any other number.
    case number(Double)
    case string(String)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let n = try? container.decode(Int64.self) {
            self = .integer(n)
        } else if let n = try? container.decode(Double.self) {
            self = .number(n)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .integer(let n): try container.encode(n)
        case .number(let n): try container.encode(n)
        case .string(let s): try container.encode(s)
        }
    }
}
