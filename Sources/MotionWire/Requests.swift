import FoundationEssentials
import MotionCore

/// A request from a client (docs/protocol.md, "Requests").
public enum Request: Sendable, Hashable {
    case watch(Watch)
    case poll(Poll)
    case devices(id: RequestID?)
    case status(id: RequestID?)
    /// Protocol 1.5.
    case history(History)

    /// The request's `id`, if it had one.
    public var id: RequestID? {
        switch self {
        case .watch(let w): w.id
        case .poll(let p): p.id
        case .devices(let id), .status(let id): id
        case .history(let h): h.id
        }
    }

    /// `WATCH`: start or stop streams.
    public struct Watch: Sendable, Hashable, Codable {
        public var id: RequestID?
        /// The streams named; `nil` only when stopping (all streams).
        public var streams: [StreamKind]?
        /// `false` stops the named streams (default true).
        public var enable: Bool?
        /// Seconds between samples (default 0.1), 0.001…60.
        public var interval: Double?
        /// The frame of `motion`'s attitude (default `xArbitraryZVertical`).
        public var frame: AttitudeReferenceFrame?
        /// Seconds a sample may wait before it is sent, so that samples go in batches (default 0), 0…10.
        public var latency: Double?

        public init(
            id: RequestID? = nil, streams: [StreamKind]?, enable: Bool? = nil, interval: Double? = nil, frame: AttitudeReferenceFrame? = nil,
            latency: Double? = nil
        ) {
            self.id = id
            self.streams = streams
            self.enable = enable
            self.interval = interval
            self.frame = frame
            self.latency = latency
        }

        /// The default interval, s.
        public static let defaultInterval = 0.1
        /// The accepted intervals, s.
        public static let intervalRange = 0.001...60.0
        /// The accepted latencies, s.
        public static let latencyRange = 0.0...10.0
    }

    /// `POLL`: one snapshot.
    public struct Poll: Sendable, Hashable, Codable {
        public var id: RequestID?
        /// The streams to include.
        public var streams: [StreamKind]
        /// The frame of `motion`'s attitude (default `xArbitraryZVertical`).
        public var frame: AttitudeReferenceFrame?

        public init(id: RequestID? = nil, streams: [StreamKind], frame: AttitudeReferenceFrame? = nil) {
            self.id = id
            self.streams = streams
            self.frame = frame
        }

        /// The refusal of a poll that names a stream of moments (a gesture, the significant-motion
        /// trigger), nil for none: it has no current state, and the snapshot would wait its 2 s for one.
        public var momentRefusal: ErrorReply? {
            guard let moment = streams.first(where: { $0.descriptor.sampling == .moments }) else { return nil }
            return ErrorReply(
                id: id, code: .invalidArgument, message: "a \(moment.rawValue) is an event with no current state: WATCH \(moment.rawValue), not POLL")
        }
    }

    /// `HISTORY`: the steps or activities of a past range (protocol 1.5).
    public struct History: Sendable, Hashable, Codable {
        public var id: RequestID?
        /// `pedometer` or `activity`.
        public var stream: StreamKind
        /// The range's start, seconds of Unix time.
        public var from: Double
        /// Its end, seconds of Unix time; `nil`: now.
        public var to: Double?

        public init(id: RequestID? = nil, stream: StreamKind, from: Double, to: Double? = nil) {
            self.id = id
            self.stream = stream
            self.from = from
            self.to = to
        }

        /// How far back the daemon keeps the history, s: 7 days.
        public static let kept = 7 * 86_400.0
    }

    private struct Header: Decodable {
        var `class`: String?
        var id: RequestID?
        /// Whether `id` was there but neither a number nor a string.
        var idIsInvalid = false
        /// Whether `class` was there but not a string.
        var classIsInvalid = false

        enum CodingKeys: String, CodingKey { case `class`, id }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            `class` = try? container.decodeIfPresent(String.self, forKey: .class)
            classIsInvalid = `class` == nil && container.contains(.class)
            if container.contains(.id), (try? container.decodeNil(forKey: .id)) != true {
                id = try? container.decode(RequestID.self, forKey: .id)
                idIsInvalid = id == nil
            }
        }
    }

    private struct IDOnly: Codable { var id: RequestID? }

    /// Parses one request line. Unknown fields are ignored.
    public static func decode(_ line: [UInt8]) -> Result<Request, ErrorReply> {
        let data = Data(line)
        let decoder = JSONDecoder()
        let header: Header
        do {
            header = try decoder.decode(Header.self, from: data)
        } catch {
            // Foundation's parser says only that the text is not JSON. The likeliest cause in an object
            // is a number JSON has not, which a language's float formatting writes (`NaN`, `Infinity`):
            // named, with its key.
            let problem = line.first(where: { !Self.isJSONSpace($0) }) == UInt8(ascii: "{") ? Self.numberProblem(in: line) : nil
            return .failure(ErrorReply(id: nil, code: .malformed, message: problem.map { "not valid JSON: \($0)" } ?? "not a JSON object"))
        }
        if header.idIsInvalid {
            return .failure(ErrorReply(id: nil, code: .malformed, message: "\"id\" must be a number or a string"))
        }
        if header.classIsInvalid {
            return .failure(ErrorReply(id: header.id, code: .malformed, message: "\"class\" must be a string"))
        }
        guard let name = header.class else {
            return .failure(ErrorReply(id: header.id, code: .malformed, message: "no \"class\" field"))
        }
        do {
            switch name {
            case "WATCH":
                let watch = try decoder.decode(Watch.self, from: data)
                if watch.enable != false, watch.streams == nil || watch.streams!.isEmpty {
                    return .failure(ErrorReply(id: header.id, code: .invalidArgument, message: "WATCH needs \"streams\""))
                }
                if let interval = watch.interval, !Watch.intervalRange.contains(interval) {
                    return .failure(ErrorReply(
                        id: header.id, code: .invalidArgument,
                        message: "interval \(interval) s is outside \(Watch.intervalRange.lowerBound)…\(Watch.intervalRange.upperBound) s"))
                }
                if let latency = watch.latency, !Watch.latencyRange.contains(latency) {
                    return .failure(ErrorReply(
                        id: header.id, code: .invalidArgument,
                        message: "latency \(latency) s is outside \(Watch.latencyRange.lowerBound)…\(Watch.latencyRange.upperBound) s"))
                }
                return .success(.watch(watch))
            case "POLL":
                let poll = try decoder.decode(Poll.self, from: data)
                if poll.streams.isEmpty {
                    return .failure(ErrorReply(id: header.id, code: .invalidArgument, message: "POLL needs \"streams\""))
                }
                if var refusal = poll.momentRefusal {
                    refusal.id = header.id
                    return .failure(refusal)
                }
                return .success(.poll(poll))
            case "HISTORY":
                let history = try decoder.decode(History.self, from: data)
                guard history.stream == .pedometer || history.stream == .activity else {
                    return .failure(ErrorReply(
                        id: header.id, code: .invalidArgument, message: "HISTORY keeps pedometer and activity, not \(history.stream.rawValue)"))
                }
                guard history.from.isFinite, history.to?.isFinite ?? true else {
                    return .failure(ErrorReply(id: header.id, code: .invalidArgument, message: "from and to must be finite numbers of seconds"))
                }
                if let to = history.to, to < history.from {
                    return .failure(ErrorReply(id: header.id, code: .invalidArgument, message: "from \(history.from) is after to \(to)"))
                }
                return .success(.history(history))
            case "DEVICES":
                return .success(.devices(id: header.id))
            case "STATUS":
                return .success(.status(id: header.id))
            default:
                return .failure(ErrorReply(
                    id: header.id, code: .unknownRequest,
                    message: "no request \"\(name.echoed)\"; requests are WATCH, POLL, HISTORY, DEVICES, STATUS"))
            }
        } catch let DecodingError.dataCorrupted(context) where context.codingPath.isEmpty {
            // The header decoded, so the text is JSON: what Foundation's parser refuses only once a
            // field is read is a number no Double holds (`"from":1e400`). A malformed request, as any
            // other value of the wrong kind.
            let problem = Self.numberProblem(in: line) ?? "a number beyond ±1.8e308"
            return .failure(ErrorReply(id: header.id, code: .malformed, message: "not valid JSON: \(problem)"))
        } catch let DecodingError.dataCorrupted(context) {
            return .failure(ErrorReply(id: header.id, code: .invalidArgument, message: describe(context)))
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            return .failure(ErrorReply(id: header.id, code: .malformed, message: describe(context)))
        } catch let DecodingError.keyNotFound(key, _) {
            return .failure(ErrorReply(id: header.id, code: .malformed, message: "\(name) needs \"\(key.stringValue)\""))
        } catch {
            return .failure(ErrorReply(id: header.id, code: .malformed, message: "\(error)"))
        }
    }

    /// The first number in `line` that JSON has not (RFC 8259, section 6: "Numeric values that cannot
    /// be represented ... (such as Infinity and NaN) are not permitted") or that no Double holds,
    /// with the key it is under: `"interval" is NaN, …`. Strings are skipped; nil if there is none.
    private static func numberProblem(in line: [UInt8]) -> String? {
        var key: String?
        var lastString: String?
        var i = 0
        while i < line.count {
            switch line[i] {
            case UInt8(ascii: "\""):
                var end = i + 1
                while end < line.count && line[end] != UInt8(ascii: "\"") { end += line[end] == UInt8(ascii: "\\") ? 2 : 1 }
                lastString = String(decoding: line[(i + 1)..<min(end, line.count)], as: UTF8.self)
                i = end + 1
            case UInt8(ascii: ":"):
                key = lastString
                i += 1
            case let byte where isJSONSpace(byte) || isJSONStructural(byte):
                i += 1
            default:
                var end = i
                while end < line.count && !isJSONSpace(line[end]) && !isJSONStructural(line[end]) && line[end] != UInt8(ascii: "\"") { end += 1 }
                let token = String(decoding: line[i..<end], as: UTF8.self)
                i = end
                // Swift reads `nan`, `inf` and `infinity` in any case, and a numeral beyond a Double as ±inf.
                guard let value = Double(token), !value.isFinite else { continue }
                let named = (key.map { "\"\($0.echoed)\" is " } ?? "") + token.echoed
                let isNumeral = token.drop { $0 == "-" || $0 == "+" }.first?.isNumber == true
                return isNumeral
                    ? "\(named), beyond the largest number a double holds (±1.8e308)"
                    : "\(named), which JSON has no number for: send a finite number"
            }
        }
        return nil
    }

    /// JSON's whitespace (RFC 8259, section 2).
    private static func isJSONSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
    }

    /// JSON's structural characters but `:` (RFC 8259, section 2).
    private static func isJSONStructural(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "{") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "[") || byte == UInt8(ascii: "]") || byte == UInt8(ascii: ",")
    }

    private static func describe(_ context: DecodingError.Context) -> String {
        let path = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
    }

    /// The request as one line (without `\n`), as a client sends it.
    public func encoded() throws -> [UInt8] {
        struct Tagged<Body: Encodable>: Encodable {
            var name: String
            var body: Body
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: ClassKey.self)
                try container.encode(name, forKey: .class)
                try body.encode(to: encoder)
            }
        }
        let encoder = JSONEncoder()
        switch self {
        case .watch(let w): return Array(try encoder.encode(Tagged(name: "WATCH", body: w)))
        case .poll(let p): return Array(try encoder.encode(Tagged(name: "POLL", body: p)))
        case .devices(let id): return Array(try encoder.encode(Tagged(name: "DEVICES", body: IDOnly(id: id))))
        case .status(let id): return Array(try encoder.encode(Tagged(name: "STATUS", body: IDOnly(id: id))))
        case .history(let h): return Array(try encoder.encode(Tagged(name: "HISTORY", body: h)))
        }
    }
}

enum ClassKey: String, CodingKey { case `class` }

extension StringProtocol {
    /// The text as an error message quotes it: at most 40 bytes of UTF-8 in whole scalars, and `…`
    /// if it was cut. Bounded in bytes, not Characters: one Character can carry thousands of bytes
    /// of combining marks, and a reply must not echo most of a 4 kB line back.
    var echoed: String {
        let limit = 40
        guard utf8.count > limit else { return String(self) }
        var kept = String.UnicodeScalarView()
        var bytes = 0
        for scalar in unicodeScalars {
            bytes += UTF8.width(scalar)
            guard bytes <= limit else { break }
            kept.append(scalar)
        }
        return String(kept) + "…"
    }
}
