import FoundationEssentials
import MotionCore
import MotionWire

/// The `mqtt` section of motiond.conf: the broker the bridge publishes to, and what it publishes
/// (motiond.conf(5), docs/fleet.md).
public struct MQTTSettings: Sendable, Equatable {
    /// `mqtt://host[:port]` (port 1883 by default) or `mqtts://host[:port]` (TLS, port 8883).
    public var broker: String
    /// The MQTT client id (default `motiond-<hostname>`): a broker lets one connection per id.
    public var clientID: String?
    /// Put before every topic (default `motiond/<hostname>/`): `<prefix><stream>`, `<prefix>status`.
    public var topicPrefix: String?
    /// The MQTT quality of service of the samples, 0, 1 or 2 (default 0: a late sample is worth less
    /// than the next one).
    public var qos = 0
    /// Whether each message carries every sample of one delivery (a JSON array) rather than one
    /// (default false). With a stream's `latency`, that is one message per batch of the sensor.
    public var batch = false
    /// Messages held while the broker is away or slow (default 1000); beyond it the oldest go, counted.
    public var queue = 1000
    /// Seconds between keep-alive pings (default 60).
    public var keepalive = 60
    /// TLS: the certificate authorities' file (PEM); `mqtts://` without it uses the system's.
    public var caFile: String?
    /// TLS client authentication: this certificate and its key (PEM), both or neither.
    public var certificateFile: String?
    public var keyFile: String?
    /// The broker's user name, and the file whose first line is its password (kept out of motiond.conf,
    /// which every user may read).
    public var username: String?
    public var passwordFile: String?
    /// What is published: each stream at its interval (and, for `motion`, frame).
    public var streams: [Stream] = [Stream(stream: .motion)]

    /// One published stream, as a `WATCH` asks for it (docs/protocol.md).
    public struct Stream: Sendable, Equatable {
        public var stream: StreamKind
        /// Seconds between samples (default 0.1); events ignore it.
        public var interval = Request.Watch.defaultInterval
        /// The attitude's frame (`motion` only; default `xArbitraryZVertical`).
        public var frame: AttitudeReferenceFrame?
        /// Seconds a sample may wait, so that the sensor delivers in batches (default 0).
        public var latency = 0.0

        public init(stream: StreamKind, interval: Double = Request.Watch.defaultInterval, frame: AttitudeReferenceFrame? = nil, latency: Double = 0) {
            (self.stream, self.interval, self.frame, self.latency) = (stream, interval, frame, latency)
        }
    }

    /// Where the broker is.
    public struct Address: Sendable, Equatable {
        public var host: String
        public var port: Int
        public var usesTLS: Bool
    }

    public init(broker: String) {
        self.broker = broker
    }

    static let keys = [
        "batch", "broker", "ca_file", "certificate_file", "client_id", "keepalive", "key_file", "password_file", "qos", "queue", "streams",
        "topic_prefix", "username",
    ]

    /// The section as the file has it.
    init(_ node: YAMLNode) throws(Configuration.Invalid) {
        guard case .mapping(let fields) = node else { throw Configuration.Invalid(path: "", problem: "mqtt: expected a mapping (broker: mqtt://host …)") }
        var broker: String?
        for (key, value) in fields where !value.isNull {
            let place = "mqtt.\(key)"
            switch key {
            case "broker": broker = try value.text(place)
            case "client_id": clientID = try value.text(place)
            case "topic_prefix": topicPrefix = try value.text(place)
            case "qos": qos = try value.integer(place)
            case "batch": batch = try value.boolean(place)
            case "queue": queue = try value.integer(place)
            case "keepalive": keepalive = try value.integer(place)
            case "ca_file": caFile = try value.text(place)
            case "certificate_file": certificateFile = try value.text(place)
            case "key_file": keyFile = try value.text(place)
            case "username": username = try value.text(place)
            case "password_file": passwordFile = try value.text(place)
            case "streams":
                guard case .sequence(let entries) = value else { throw Configuration.Invalid(path: "", problem: "\(place): expected a list of streams") }
                streams = try entries.enumerated().map { (index, entry) throws(Configuration.Invalid) in try Stream(entry, at: "\(place)[\(index)]") }
            default:
                throw Configuration.Invalid(path: "", problem: "mqtt: unknown key \"\(key)\" (known: \(Self.keys.joined(separator: ", ")))")
            }
        }
        guard let broker else { throw Configuration.Invalid(path: "", problem: "mqtt: missing broker (such as mqtt://localhost)") }
        self.broker = broker
    }

    /// The broker's address, or what is wrong with `broker`.
    public func address() throws(Configuration.Invalid) -> Address {
        let parts = broker.split(separator: "://", maxSplits: 1, omittingEmptySubsequences: false)
        let (scheme, rest) = parts.count == 2 ? (String(parts[0]), parts[1]) : ("mqtt", broker[...])
        guard scheme == "mqtt" || scheme == "mqtts" else {
            throw Configuration.Invalid(path: "", problem: "mqtt.broker \"\(broker)\": the scheme is mqtt:// or mqtts://, not \(scheme)://")
        }
        let usesTLS = scheme == "mqtts"
        var host = rest.hasSuffix("/") ? rest.dropLast() : rest
        var port = usesTLS ? 8883 : 1883
        // host, host:port, [v6], [v6]:port
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            let after = host[host.index(after: close)...]
            if after.hasPrefix(":") {
                guard let given = Int(after.dropFirst()), (1...65535).contains(given) else { throw badPort() }
                port = given
            } else if !after.isEmpty {
                throw badPort()
            }
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.lastIndex(of: ":") {
            guard let given = Int(host[host.index(after: colon)...]), (1...65535).contains(given) else { throw badPort() }
            port = given
            host = host[..<colon]
        }
        guard !host.isEmpty, !host.contains("/") else {
            throw Configuration.Invalid(path: "", problem: "mqtt.broker \"\(broker)\" names no host (such as mqtt://localhost:1883)")
        }
        return Address(host: String(host), port: port, usesTLS: usesTLS)
    }

    private func badPort() -> Configuration.Invalid {
        Configuration.Invalid(path: "", problem: "mqtt.broker \"\(broker)\": the port is a number 1…65535")
    }

    /// Checks every value.
    func validate() throws(Configuration.Invalid) {
        let address = try address()
        guard (0...2).contains(qos) else { throw Configuration.Invalid(path: "", problem: "mqtt.qos is 0, 1 or 2, not \(qos)") }
        guard (1...1_000_000).contains(queue) else { throw Configuration.Invalid(path: "", problem: "mqtt.queue is 1…1000000 messages, not \(queue)") }
        guard (5...65535).contains(keepalive) else { throw Configuration.Invalid(path: "", problem: "mqtt.keepalive is 5…65535 s, not \(keepalive)") }
        guard (certificateFile == nil) == (keyFile == nil) else {
            throw Configuration.Invalid(path: "", problem: "mqtt: certificate_file and key_file go together")
        }
        if !address.usesTLS && (caFile != nil || certificateFile != nil) {
            throw Configuration.Invalid(path: "", problem: "mqtt: ca_file and certificate_file are for an mqtts:// broker")
        }
        if passwordFile != nil && username == nil { throw Configuration.Invalid(path: "", problem: "mqtt: password_file needs a username") }
        if let prefix = topicPrefix, prefix.contains("#") || prefix.contains("+") {
            throw Configuration.Invalid(path: "", problem: "mqtt.topic_prefix \"\(prefix)\" has a wildcard (# or +), which a topic may not")
        }
        guard !streams.isEmpty else { throw Configuration.Invalid(path: "", problem: "mqtt.streams: name at least one stream") }
        var seen: Set<StreamKind> = []
        for stream in streams {
            guard seen.insert(stream.stream).inserted else { throw Configuration.Invalid(path: "", problem: "mqtt.streams: \(stream.stream) is listed twice") }
        }
    }
}

extension MQTTSettings.Stream {
    init(_ node: YAMLNode, at place: String) throws(Configuration.Invalid) {
        // `- motion` is the stream with every default.
        if case .scalar(let name, _) = node {
            self.init(stream: try Self.stream(name, at: place))
            return
        }
        guard case .mapping(let fields) = node else { throw Configuration.Invalid(path: "", problem: "\(place): expected a stream name or {stream: …, interval: …}") }
        var stream: StreamKind?
        var interval = Request.Watch.defaultInterval
        var frame: AttitudeReferenceFrame?
        var latency = 0.0
        for (key, value) in fields where !value.isNull {
            switch key {
            case "stream": stream = try Self.stream(try value.text("\(place).stream"), at: place)
            case "interval":
                interval = try value.number("\(place).interval")
                guard Request.Watch.intervalRange.contains(interval) else {
                    throw Configuration.Invalid(path: "", problem: "\(place).interval \(interval) s is outside \(Request.Watch.intervalRange.lowerBound)…\(Request.Watch.intervalRange.upperBound) s")
                }
            case "latency":
                latency = try value.number("\(place).latency")
                guard Request.Watch.latencyRange.contains(latency) else {
                    throw Configuration.Invalid(path: "", problem: "\(place).latency \(latency) s is outside 0…\(Request.Watch.latencyRange.upperBound) s")
                }
            case "frame":
                let name = try value.text("\(place).frame")
                guard let given = AttitudeReferenceFrame(rawValue: name) else {
                    let known = AttitudeReferenceFrame.allCases.map(\.rawValue).joined(separator: ", ")
                    throw Configuration.Invalid(path: "", problem: "\(place).frame \"\(name)\" is not one of \(known)")
                }
                frame = given
            default: throw Configuration.Invalid(path: "", problem: "\(place): unknown key \"\(key)\" (known: frame, interval, latency, stream)")
            }
        }
        guard let stream else { throw Configuration.Invalid(path: "", problem: "\(place): missing stream") }
        if frame != nil && stream != .motion { throw Configuration.Invalid(path: "", problem: "\(place): frame is for the motion stream") }
        self.init(stream: stream, interval: interval, frame: frame, latency: latency)
    }

    private static func stream(_ name: String, at place: String) throws(Configuration.Invalid) -> StreamKind {
        guard let stream = StreamKind(rawValue: name) else {
            throw Configuration.Invalid(path: "", problem: "\(place): \"\(name)\" is not a stream (\(StreamKind.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        return stream
    }
}
