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
    case presence(PresenceMessage)
    case significantMotion(SignificantMotionMessage)
    case dropped(Dropped)
    case ended(Ended)
    case snapshot(Snapshot)
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

    /// `message` as its case; nil for a type that neither list of classes (the streams' catalogue,
    /// `replies`) names.
    public init?(_ message: some ServerMessage) {
        guard let wrapped = Self.classes[ObjectIdentifier(type(of: message))]?.wrap(message) else { return nil }
        self = wrapped
    }

    /// The classes that are no stream's message: the replies, and the notices `VERSION`, `DROPPED`
    /// and `ENDED`. The streams' are in their catalogue, `StreamKind.descriptor`.
    public static let replies = [
        MessageClass(version), MessageClass(error), MessageClass(watching), MessageClass(dropped), MessageClass(ended),
        MessageClass(snapshot), MessageClass(devices), MessageClass(status), MessageClass(history),
    ]

    /// Every class, the streams' then the others'.
    public static let allClasses = StreamKind.allCases.map(\.descriptor.message) + replies

    private static let classes = Dictionary(uniqueKeysWithValues: allClasses.map { (ObjectIdentifier($0.type), $0) })
    private static let classesByName = Dictionary(uniqueKeysWithValues: allClasses.map { ($0.name, $0) })

    /// The stream a sample or an event is of; `nil` for replies, `DROPPED`, `ENDED` and the rest.
    public var stream: StreamKind? { open(StreamOf()) ?? nil }

    /// The message itself (`nil` for an unknown class).
    public var message: (any ServerMessage)? { open(Boxed()) }

    /// The message, if it is of type `type`.
    public func payload<M: ServerMessage>(as type: M.Type) -> M? { open(Cast<M>()) ?? nil }

    /// Hands the message to `visitor` as its own type, unboxed (the per-sample path allocates
    /// nothing); `nil` for an unknown class. The one list of the cases besides their declarations.
    private func open<V: Visitor>(_ visitor: V) -> V.Result? {
        switch self {
        case .version(let m): visitor.visit(m)
        case .error(let m): visitor.visit(m)
        case .watching(let m): visitor.visit(m)
        case .motion(let m): visitor.visit(m)
        case .accelerometer(let m): visitor.visit(m)
        case .gyroscope(let m): visitor.visit(m)
        case .magnetometer(let m): visitor.visit(m)
        case .proximity(let m): visitor.visit(m)
        case .light(let m): visitor.visit(m)
        case .orientation(let m): visitor.visit(m)
        case .tilt(let m): visitor.visit(m)
        case .hinge(let m): visitor.visit(m)
        case .pedometer(let m): visitor.visit(m)
        case .activity(let m): visitor.visit(m)
        case .altitude(let m): visitor.visit(m)
        case .gesture(let m): visitor.visit(m)
        case .presence(let m): visitor.visit(m)
        case .significantMotion(let m): visitor.visit(m)
        case .dropped(let m): visitor.visit(m)
        case .ended(let m): visitor.visit(m)
        case .snapshot(let m): visitor.visit(m)
        case .devices(let m): visitor.visit(m)
        case .status(let m): visitor.visit(m)
        case .history(let m): visitor.visit(m)
        case .unknown: nil
        }
    }

    private struct StreamOf: Visitor {
        func visit<M: ServerMessage>(_ message: M) -> StreamKind? { StreamKind(messageType: M.self) }
    }

    private struct Boxed: Visitor {
        func visit<M: ServerMessage>(_ message: M) -> any ServerMessage { message }
    }

    private struct Cast<Wanted: ServerMessage>: Visitor {
        func visit<M: ServerMessage>(_ message: M) -> Wanted? { message as? Wanted }
    }

    /// Reads `class`, then the message of that class from the same decoder: one parse of the line.
    private struct Decoded: Decodable {
        let message: AnyServerMessage

        private enum Key: String, CodingKey { case `class` }

        init(from decoder: any Decoder) throws {
            let name = try decoder.container(keyedBy: Key.self).decode(String.self, forKey: .class)
            message = try AnyServerMessage.classesByName[name]?.decode(decoder) ?? .unknown(className: name)
        }
    }
}

/// What `AnyServerMessage.open` hands a message to.
private protocol Visitor {
    associatedtype Result
    func visit<M: ServerMessage>(_ message: M) -> Result
}

/// A class of message: its type (which names the class and reads and writes its fields) and its case
/// of `AnyServerMessage`.
public struct MessageClass: Sendable {
    /// The message's type.
    public let type: any ServerMessage.Type
    /// Reads the message from a decoder at its object, as its case.
    let decode: @Sendable (any Decoder) throws -> AnyServerMessage
    /// The message as its case; nil for a message of another type.
    let wrap: @Sendable (any ServerMessage) -> AnyServerMessage?

    /// The class whose messages are `AnyServerMessage`'s case `make`.
    init<M: ServerMessage>(_ make: @escaping @Sendable (M) -> AnyServerMessage) {
        type = M.self
        decode = { make(try M(from: $0)) }
        wrap = { ($0 as? M).map(make) }
    }

    /// The value of the `class` field.
    public var name: String { type.className }
}
