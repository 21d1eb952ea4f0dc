import MotionCore

/// The version of the protocol this code speaks (docs/protocol.md).
public enum ProtocolVersion {
    /// Incompatible changes change the major version.
    public static let major = 1
    /// Additions change the minor version.
    public static let minor = 11
    /// The longest request line the daemon reads, bytes, `\n` included.
    public static let maximumLineLength = 4096
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
