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

    /// Whether the stream is an event stream (state at start, then each change) rather than periodic.
    public var isEventStream: Bool {
        switch self {
        case .proximity, .light, .orientation, .tilt, .pedometer, .activity, .gesture: true
        case .motion, .accelerometer, .gyroscope, .magnetometer, .hinge, .altitude: false
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

    /// Whether the stream comes from the step detector (`pedometer`, `activity`): its accelerometer
    /// runs at the detector's rate, read in batches, not at the other event streams' 4 Hz.
    public var isGaitStream: Bool { self == .pedometer || self == .activity }
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
