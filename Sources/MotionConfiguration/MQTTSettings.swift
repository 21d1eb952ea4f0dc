import FoundationEssentials
import MotionCore
import MotionWire

/// The `mqtt` section of motiond.conf: the broker the bridge publishes to, and what it publishes
/// (motiond.conf(5), docs/fleet.md).
public struct MQTTSettings: Sendable, Equatable, SettingsSection {
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
    public struct Stream: Sendable, Equatable, SettingsSection {
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

        init() { self.init(stream: .motion) }

        static let settings: [Setting<Stream>] = [
            .value("stream", \.stream, .named(StreamKind.self, "stream name"), default: nil, required: true, summary: "The stream."),
            .value(
                "interval", \.interval, .number("seconds"), default: "\(Request.Watch.defaultInterval)", summary: "Seconds between samples; events ignore it.",
                check: { Request.Watch.intervalRange.contains($0) ? nil : "\($0) s is outside \(Request.Watch.intervalRange.lowerBound)...\(Request.Watch.intervalRange.upperBound) s" }),
            .optional("frame", \.frame, .named(AttitudeReferenceFrame.self, "frame"), default: "xArbitraryZVertical", summary: "The attitude's frame (motion only)."),
            .value(
                "latency", \.latency, .number("seconds"), default: "0", summary: "Seconds a sample may wait, so that the sensor delivers in batches.",
                check: { Request.Watch.latencyRange.contains($0) ? nil : "\($0) s is outside 0...\(Request.Watch.latencyRange.upperBound) s" }),
        ]

        func checkTogether(at place: Place) throws(Configuration.Invalid) {
            if frame != nil && stream != .motion { throw place.invalid("frame is for the motion stream") }
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

    init() { self.init(broker: "") }

    static let settings: [Setting<MQTTSettings>] = [
        .value(
            "broker", \.broker, .text("mqtt://host[:port] or mqtts://host[:port]"), default: nil, required: true, summary: "The broker.",
            check: { broker in
                guard case .failure(let invalid) = address(of: broker) else { return nil }
                return invalid.problem
            }),
        .optional("client_id", \.clientID, .text("text"), default: "motiond-<hostname>", summary: "The MQTT client id."),
        .optional(
            "topic_prefix", \.topicPrefix, .text("text"), default: "motiond/<hostname>/", summary: "Put before every topic.",
            check: { $0.contains("#") || $0.contains("+") ? "\"\($0)\" has a wildcard (# or +), which a topic may not" : nil }),
        .value("qos", \.qos, .integer("0, 1 or 2"), default: "0", summary: "The MQTT quality of service of the samples.", check: { (0...2).contains($0) ? nil : "must be 0, 1 or 2, not \($0)" }),
        .value("batch", \.batch, .boolean, default: "false", summary: "Whether each message carries every sample of one delivery, as a JSON array."),
        .value(
            "queue", \.queue, .integer("messages, 1 to 1000000"), default: "1000", summary: "Messages held while the broker is away, the oldest dropped beyond it.",
            check: { (1...1_000_000).contains($0) ? nil : "must be 1...1000000 messages, not \($0)" }),
        .value(
            "keepalive", \.keepalive, .integer("seconds, 5 to 65535"), default: "60", summary: "Seconds between keep-alive pings.",
            check: { (5...65535).contains($0) ? nil : "must be 5...65535 s, not \($0)" }),
        .optional("ca_file", \.caFile, .text("path"), default: "the system's", summary: "TLS (mqtts://): the certificate authorities' file (PEM)."),
        .optional("certificate_file", \.certificateFile, .text("path"), default: nil, summary: "TLS client authentication: the certificate (PEM), with key_file."),
        .optional("key_file", \.keyFile, .text("path"), default: nil, summary: "TLS client authentication: the certificate's key (PEM)."),
        .optional("username", \.username, .text("text"), default: nil, summary: "The broker's user name."),
        .optional("password_file", \.passwordFile, .text("path"), default: nil, summary: "The file whose first line is the password."),
        .value(
            "streams", \.streams, .list(of: .section("stream name, or mapping", orFirst: true), "list of stream names or mappings"),
            default: "motion every 0.1 s", summary: "What is published.",
            check: { streams in
                guard !streams.isEmpty else { return "name at least one stream" }
                var seen: Set<StreamKind> = []
                return streams.first { !seen.insert($0.stream).inserted }.map { "\($0.stream) is listed twice" }
            }),
    ]

    func checkTogether(at place: Place) throws(Configuration.Invalid) {
        guard (certificateFile == nil) == (keyFile == nil) else { throw place.invalid("certificate_file and key_file go together") }
        if case .success(let address) = Self.address(of: broker), !address.usesTLS && (caFile != nil || certificateFile != nil) {
            throw place.invalid("ca_file and certificate_file are for an mqtts:// broker")
        }
        if passwordFile != nil && username == nil { throw place.invalid("password_file needs a username") }
    }

    /// The broker's address, or what is wrong with `broker`.
    public func address() throws(Configuration.Invalid) -> Address {
        try Self.address(of: broker).get()
    }

    private static func address(of broker: String) -> Result<Address, Configuration.Invalid> {
        let place = Place(key: "mqtt.broker")
        let badPort = place.invalid("\"\(broker)\": the port is a number 1...65535")
        let parts = broker.split(separator: "://", maxSplits: 1, omittingEmptySubsequences: false)
        let (scheme, rest) = parts.count == 2 ? (String(parts[0]), parts[1]) : ("mqtt", broker[...])
        guard scheme == "mqtt" || scheme == "mqtts" else { return .failure(place.invalid("\"\(broker)\": the scheme is mqtt:// or mqtts://, not \(scheme)://")) }
        let usesTLS = scheme == "mqtts"
        let named = rest.hasSuffix("/") ? rest.dropLast() : rest
        // host, host:port, [v6], [v6]:port: a port follows the bracket, else the last colon.
        let close = named.hasPrefix("[") ? named.firstIndex(of: "]") : nil
        let portStart = close.map { named.index(after: $0) } ?? named.lastIndex(of: ":") ?? named.endIndex
        let after = named[portStart...]
        var port = usesTLS ? 8883 : 1883
        if !after.isEmpty {
            guard after.hasPrefix(":"), let given = Int(after.dropFirst()), (1...65535).contains(given) else { return .failure(badPort) }
            port = given
        }
        let host = close.map { named[named.index(after: named.startIndex)..<$0] } ?? named[..<after.startIndex]
        guard !host.isEmpty, !host.contains("/") else { return .failure(place.invalid("\"\(broker)\" names no host (such as mqtt://localhost:1883)")) }
        return .success(Address(host: String(host), port: port, usesTLS: usesTLS))
    }
}
