import FoundationEssentials

/// Any message the daemon sends, decoded from its line once: the `class` picks the case, and the same
/// parse fills the message's fields. Every reader of the daemon's lines (the client library,
/// motionctl, the D-Bus bridge) goes through it rather than a switch of its own.
public enum AnyServerMessage: Sendable, Hashable {
    case version(Version)
    case error(ErrorReply)
    case watching(Watching)
    case motion(MotionMessage)
    case accelerometer(AccelerometerMessage)
    case gyroscope(GyroscopeMessage)
    case magnetometer(MagnetometerMessage)
    case proximity(ProximityMessage)
    case light(LightMessage)
    case orientation(OrientationMessage)
    case tilt(TiltMessage)
    case hinge(HingeMessage)
    case pedometer(PedometerMessage)
    case activity(ActivityMessage)
    case altitude(AltitudeMessage)
    case gesture(GestureMessage)
    case dropped(Dropped)
    case ended(Ended)
    /// Boxed: a snapshot holds every stream's message, and inline it would make every value of this
    /// enum (one per sample sent) as large as all of them together.
    indirect case snapshot(Snapshot)
    case devices(DevicesReply)
    case status(StatusReply)
    case history(HistoryReply)
    /// A class this version does not know: a later minor version of the protocol added it, and a
    /// reader skips it (docs/protocol.md: fields and classes are added, never renamed).
    case unknown(className: String)

    /// A line that is no message this version can read: its class, if it has one, and what is wrong.
    /// A later minor version may send a known class with a value this one does not know (a new
    /// stream or error code): a reader decides by the class whether that matters to it.
    public struct Malformed: Error, CustomStringConvertible {
        public var className: String?
        public var problem: String
        public var description: String { "\(className ?? "a line without a class"): \(problem)" }
    }

    /// Decodes one line of the daemon's (a JSON object with its `class`). Throws `Malformed` for a
    /// line that is not such an object, or whose fields do not fit its class.
    public init(line: [UInt8]) throws(Malformed) {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        do {
            self = try decoder.decode(Decoded.self, from: Data(line)).message
        } catch {
            throw Malformed(className: Wire.className(of: line), problem: "\(error)")
        }
    }

    /// `message` as a case of its own (`unknown` for a class this version does not list): what the
    /// daemon hands its in-process front ends, which switch on values and never parse a line.
    public init(_ message: some ServerMessage) {
        self =
            switch message {
            case let m as Version: .version(m)
            case let m as ErrorReply: .error(m)
            case let m as Watching: .watching(m)
            case let m as MotionMessage: .motion(m)
            case let m as AccelerometerMessage: .accelerometer(m)
            case let m as GyroscopeMessage: .gyroscope(m)
            case let m as MagnetometerMessage: .magnetometer(m)
            case let m as ProximityMessage: .proximity(m)
            case let m as LightMessage: .light(m)
            case let m as OrientationMessage: .orientation(m)
            case let m as TiltMessage: .tilt(m)
            case let m as HingeMessage: .hinge(m)
            case let m as PedometerMessage: .pedometer(m)
            case let m as ActivityMessage: .activity(m)
            case let m as AltitudeMessage: .altitude(m)
            case let m as GestureMessage: .gesture(m)
            case let m as Dropped: .dropped(m)
            case let m as Ended: .ended(m)
            case let m as Snapshot: .snapshot(m)
            case let m as DevicesReply: .devices(m)
            case let m as StatusReply: .status(m)
            case let m as HistoryReply: .history(m)
            default: .unknown(className: type(of: message).className)
            }
    }

    /// The stream a sample or an event is of; `nil` for replies, `DROPPED`, `ENDED` and the rest.
    public var stream: StreamKind? {
        switch self {
        case .motion: .motion
        case .accelerometer: .accelerometer
        case .gyroscope: .gyroscope
        case .magnetometer: .magnetometer
        case .proximity: .proximity
        case .light: .light
        case .orientation: .orientation
        case .tilt: .tilt
        case .hinge: .hinge
        case .pedometer: .pedometer
        case .activity: .activity
        case .altitude: .altitude
        case .gesture: .gesture
        case .version, .error, .watching, .dropped, .ended, .snapshot, .devices, .status, .history, .unknown: nil
        }
    }

    /// The message itself (`nil` for an unknown class).
    public var message: (any ServerMessage)? {
        switch self {
        case .version(let m): m
        case .error(let m): m
        case .watching(let m): m
        case .motion(let m): m
        case .accelerometer(let m): m
        case .gyroscope(let m): m
        case .magnetometer(let m): m
        case .proximity(let m): m
        case .light(let m): m
        case .orientation(let m): m
        case .tilt(let m): m
        case .hinge(let m): m
        case .pedometer(let m): m
        case .activity(let m): m
        case .altitude(let m): m
        case .gesture(let m): m
        case .dropped(let m): m
        case .ended(let m): m
        case .snapshot(let m): m
        case .devices(let m): m
        case .status(let m): m
        case .history(let m): m
        case .unknown: nil
        }
    }

    /// Reads `class`, then the message of that class from the same decoder: one parse of the line.
    private struct Decoded: Decodable {
        let message: AnyServerMessage

        private enum Key: String, CodingKey { case `class` }

        init(from decoder: any Decoder) throws {
            let name = try decoder.container(keyedBy: Key.self).decode(String.self, forKey: .class)
            func decode<M: ServerMessage>(_ type: M.Type) throws -> M { try M(from: decoder) }
            message =
                switch name {
                case Version.className: .version(try decode(Version.self))
                case ErrorReply.className: .error(try decode(ErrorReply.self))
                case Watching.className: .watching(try decode(Watching.self))
                case MotionMessage.className: .motion(try decode(MotionMessage.self))
                case AccelerometerMessage.className: .accelerometer(try decode(AccelerometerMessage.self))
                case GyroscopeMessage.className: .gyroscope(try decode(GyroscopeMessage.self))
                case MagnetometerMessage.className: .magnetometer(try decode(MagnetometerMessage.self))
                case ProximityMessage.className: .proximity(try decode(ProximityMessage.self))
                case LightMessage.className: .light(try decode(LightMessage.self))
                case OrientationMessage.className: .orientation(try decode(OrientationMessage.self))
                case TiltMessage.className: .tilt(try decode(TiltMessage.self))
                case HingeMessage.className: .hinge(try decode(HingeMessage.self))
                case PedometerMessage.className: .pedometer(try decode(PedometerMessage.self))
                case ActivityMessage.className: .activity(try decode(ActivityMessage.self))
                case AltitudeMessage.className: .altitude(try decode(AltitudeMessage.self))
                case GestureMessage.className: .gesture(try decode(GestureMessage.self))
                case Dropped.className: .dropped(try decode(Dropped.self))
                case Ended.className: .ended(try decode(Ended.self))
                case Snapshot.className: .snapshot(try decode(Snapshot.self))
                case DevicesReply.className: .devices(try decode(DevicesReply.self))
                case StatusReply.className: .status(try decode(StatusReply.self))
                case HistoryReply.className: .history(try decode(HistoryReply.self))
                default: .unknown(className: name)
                }
        }
    }
}

extension Snapshot {
    /// Puts a stream's message in its field; a message of no stream (a reply, `DROPPED`) is no field.
    public mutating func insert(_ message: AnyServerMessage) {
        switch message {
        case .motion(let m): motion = m
        case .accelerometer(let m): accelerometer = m
        case .gyroscope(let m): gyroscope = m
        case .magnetometer(let m): magnetometer = m
        case .proximity(let m): proximity = m
        case .light(let m): light = m
        case .orientation(let m): orientation = m
        case .tilt(let m): tilt = m
        case .hinge(let m): hinge = m
        case .pedometer(let m): pedometer = m
        case .activity(let m): activity = m
        case .altitude(let m): altitude = m
        case .gesture(let m): gesture = m
        case .version, .error, .watching, .dropped, .ended, .snapshot, .devices, .status, .history, .unknown: break
        }
    }
}
