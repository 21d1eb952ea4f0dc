import FoundationEssentials
import MotionCore

/// A message the daemon sends (docs/protocol.md): its `class` names its type.
public protocol ServerMessage: Codable, Sendable, Hashable {
    /// The value of the `class` field.
    static var className: String { get }
}

/// `VERSION`: the daemon's greeting.
public struct Version: ServerMessage {
    public static let className = "VERSION"
    /// The daemon's release, e.g. `0.1.0`.
    public var release: String
    public var protoMajor: Int
    public var protoMinor: Int

    public init(release: String, protoMajor: Int = ProtocolVersion.major, protoMinor: Int = ProtocolVersion.minor) {
        self.release = release
        self.protoMajor = protoMajor
        self.protoMinor = protoMinor
    }
}

/// The error codes of `ERROR`.
public enum ErrorCode: String, Sendable, Hashable, Codable {
    case malformed
    case tooLong = "too_long"
    case unknownRequest = "unknown_request"
    case invalidArgument = "invalid_argument"
    case unavailable
    case timeout
    case `internal`
}

/// `ERROR`: a refused request.
public struct ErrorReply: ServerMessage, Error {
    public static let className = "ERROR"
    public var id: RequestID?
    public var code: ErrorCode
    /// What was wrong, for a person.
    public var message: String

    public init(id: RequestID?, code: ErrorCode, message: String) {
        self.id = id
        self.code = code
        self.message = message
    }
}

/// `WATCHING`: the streams a client now watches.
public struct Watching: ServerMessage {
    public static let className = "WATCHING"
    public struct Stream: Codable, Sendable, Hashable {
        public var stream: StreamKind
        /// Seconds between samples (periodic streams only).
        public var interval: Double?
        /// The attitude's frame (`motion` only).
        public var frame: AttitudeReferenceFrame?
        /// Seconds a sample may wait before it is sent (periodic streams; absent when 0).
        public var latency: Double?

        public init(stream: StreamKind, interval: Double? = nil, frame: AttitudeReferenceFrame? = nil, latency: Double? = nil) {
            self.stream = stream
            self.interval = interval
            self.frame = frame
            self.latency = latency
        }
    }

    public var id: RequestID?
    public var streams: [Stream]

    public init(id: RequestID?, streams: [Stream]) {
        self.id = id
        self.streams = streams
    }
}

/// `DROPPED`: stream messages lost to a slow reader.
public struct Dropped: ServerMessage {
    public static let className = "DROPPED"
    public var stream: StreamKind
    public var count: Int
    public init(stream: StreamKind, count: Int) {
        self.stream = stream
        self.count = count
    }
}

/// `ENDED`: a stream ended because its sensor went away or failed.
public struct Ended: ServerMessage {
    public static let className = "ENDED"
    public var stream: StreamKind
    public var reason: String
    public init(stream: StreamKind, reason: String) {
        self.stream = stream
        self.reason = reason
    }
}

/// `DEVICES`: the reply to `DEVICES`.
public struct DevicesReply: ServerMessage {
    public static let className = "DEVICES"
    public struct Device: Codable, Sendable, Hashable {
        /// `iio:deviceN`.
        public var device: String
        public var name: String
        public var kinds: [SensorKind]
        /// `buffered` or `polled`.
        public var mode: String
        /// Offered rates, Hz, if the device lists them.
        public var rates: [Double]?
        /// Row by row.
        public var mountMatrix: [Double]
        public var mountMatrixSource: String
        /// What is applied to the readings to put them in the device frame, row by row (1.1).
        public var frameMatrix: [Double]?
        /// What was changed in a mount matrix that is no rotation (1.1; absent when nothing was).
        public var mountMatrixCorrection: String?
        /// The sysfs `label` (1.1).
        public var label: String?
        /// `display` or `base` (1.1).
        public var location: String?
        /// Value attributes per kind.
        public var channels: [String: [String]]

        public init(
            device: String, name: String, kinds: [SensorKind], mode: String, rates: [Double]?, mountMatrix: [Double],
            mountMatrixSource: String, frameMatrix: [Double]? = nil, mountMatrixCorrection: String? = nil, label: String? = nil,
            location: String? = nil, channels: [String: [String]]
        ) {
            self.frameMatrix = frameMatrix
            self.mountMatrixCorrection = mountMatrixCorrection
            self.label = label
            self.location = location
            self.device = device
            self.name = name
            self.kinds = kinds
            self.mode = mode
            self.rates = rates
            self.mountMatrix = mountMatrix
            self.mountMatrixSource = mountMatrixSource
            self.channels = channels
        }
    }

    public var id: RequestID?
    public var devices: [Device]

    public init(id: RequestID?, devices: [Device]) {
        self.id = id
        self.devices = devices
    }
}

/// `HISTORY`: the reply to `HISTORY` (protocol 1.5).
public struct HistoryReply: ServerMessage {
    public static let className = "HISTORY"
    /// One activity of the history.
    public struct Activity: Codable, Sendable, Hashable {
        public var activity: MotionActivityKind
        public var confidence: MotionActivityConfidence
        /// When it began, seconds of Unix time.
        public var start: Double
        public init(activity: MotionActivityKind, confidence: MotionActivityConfidence, start: Double) {
            self.activity = activity
            self.confidence = confidence
            self.start = start
        }
    }
    public var id: RequestID?
    /// `pedometer` or `activity`.
    public var stream: StreamKind
    /// The range, seconds of Unix time.
    public var from: Double
    public var to: Double
    /// `pedometer`: the steps of the minutes that begin in the range.
    public var steps: Int?
    /// `pedometer`: their distance, m.
    public var distance: Double?
    /// `activity`: the one under way at `from`, then those that began in the range, oldest first.
    public var activities: [Activity]?
    /// `true` when older activities of the range were left out (at most 1,024 per reply).
    public var truncated: Bool?

    public init(
        id: RequestID?, stream: StreamKind, from: Double, to: Double, steps: Int? = nil, distance: Double? = nil,
        activities: [Activity]? = nil, truncated: Bool? = nil
    ) {
        self.id = id
        self.stream = stream
        self.from = from
        self.to = to
        self.steps = steps
        self.distance = distance
        self.activities = activities
        self.truncated = truncated
    }
}

/// `STATUS`: the reply to `STATUS`.
public struct StatusReply: ServerMessage {
    public static let className = "STATUS"
    public struct Sensor: Codable, Sendable, Hashable {
        public var device: String
        public var kinds: [SensorKind]
        public var mode: String
        /// Hz, as set.
        public var rate: Double
        /// Hz, as measured over the last seconds.
        public var measuredRate: Double?
        /// How an accelerometer that only event streams read learns of a move while still:
        /// `motion-events` or `adaptive-polling` (1.7; nil: the capture does not rest).
        public var rest: String?
        /// Why a better way to rest was refused or given up (1.7).
        public var restNote: String?

        public init(
            device: String, kinds: [SensorKind], mode: String, rate: Double, measuredRate: Double?, rest: String? = nil, restNote: String? = nil
        ) {
            self.device = device
            self.kinds = kinds
            self.mode = mode
            self.rate = rate
            self.measuredRate = measuredRate
            self.rest = rest
            self.restNote = restNote
        }
    }

    public struct Calibration: Codable, Sendable, Hashable {
        /// rad/s.
        public var gyroscopeBias: Vector3
        /// The gyroscope's sensitivity error per device axis, dimensionless (nil: not known): the rate
        /// used is raw × (1 + scale) − bias.
        public var gyroscopeScale: Vector3?
        /// The bias estimate's standard deviation, rad/s (its largest axis; nil: not known).
        public var gyroscopeBiasUncertainty: Double?
        /// Whether `gyroscopeBiasUncertainty` is at most `calibratedUncertainty` (nil: not known).
        public var gyroscopeCalibrated: Bool?
        /// µT.
        public var magnetometerOffset: Vector3
        public var magneticFieldAccuracy: MagneticFieldAccuracy

        /// The bias uncertainty at which the gyroscope counts as calibrated, rad/s: 0.05 °/s, so that a
        /// device at rest drifts at most 3° a minute in yaw.
        public static let calibratedUncertainty = 0.05 * Double.pi / 180

        public init(
            gyroscopeBias: Vector3, gyroscopeScale: Vector3? = nil, gyroscopeBiasUncertainty: Double? = nil, magnetometerOffset: Vector3,
            magneticFieldAccuracy: MagneticFieldAccuracy
        ) {
            self.gyroscopeBias = gyroscopeBias
            self.gyroscopeScale = gyroscopeScale
            self.gyroscopeBiasUncertainty = gyroscopeBiasUncertainty
            self.gyroscopeCalibrated = gyroscopeBiasUncertainty.map { $0 <= Self.calibratedUncertainty }
            self.magnetometerOffset = magnetometerOffset
            self.magneticFieldAccuracy = magneticFieldAccuracy
        }
    }

    public var id: RequestID?
    /// Seconds since the daemon started.
    public var uptime: Double
    public var clients: Int
    public var sensors: [Sensor]
    /// Stream messages dropped for slow readers since start.
    public var dropped: Int
    public var calibration: Calibration?
    /// What this machine's sensors cannot give, and why (1.1); absent when it can give everything.
    public var unavailable: Unavailable?
    /// Whether the gyroscope's axes agree with the accelerometer's, checked on the device's own turns
    /// while motion is fused (1.7; absent until there is a verdict).
    public var gyroscopeAxes: GyroscopeAxes?

    /// Whether the magnetometer's axes agree with the gyroscope's, checked once the gyroscope's agree
    /// with the accelerometer's (1.8; absent until there is a verdict): `mendingMatrix` its readings'.
    public var magnetometerAxes: GyroscopeAxes?

    /// The Earth's field where the machine is (motiond.conf's `location`, else GeoClue's), from the
    /// World Magnetic Model, as of the last fusion's start or place (1.8; absent without a place).
    public var geomagnetic: Geomagnetic?

    /// The sensors closed and opened again while their device stayed, by reason (1.10; absent until one was).
    public var recoveries: [Recovery]?
    /// The machine's sleeps seen since start (1.10; absent before the first).
    public var sleeps: Int?
    /// What counts the steps (1.11; absent while none are counted).
    public var pedometer: Source?
    /// What tells the activity (1.11; absent while none is told).
    public var activity: Source?

    /// What a pedometer's steps or an activity come from.
    public struct Source: Codable, Sendable, Hashable {
        /// `step-counter` (the chip's counter), `activity-recognizer` (the chip's classes) or
        /// `accelerometer` (the step detector on its samples): a `SensorKind`'s raw value.
        public var source: String
        /// `iio:deviceN`.
        public var device: String

        /// `source` on `device`.
        public init(source: String, device: String) {
            (self.source, self.device) = (source, device)
        }
    }

    /// How often one sensor was re-armed for one reason.
    public struct Recovery: Codable, Sendable, Hashable {
        /// `iio:deviceN`.
        public var device: String
        /// `resume`, `silence` or `failing-reads` (`RecoveryReason`'s raw values).
        public var reason: String
        /// Re-arms since start.
        public var count: Int

        /// `count` re-arms of `device` for `reason`.
        public init(device: String, reason: String, count: Int) {
            (self.device, self.reason, self.count) = (device, reason, count)
        }
    }

    /// The World Magnetic Model's field at the configured place.
    public struct Geomagnetic: Codable, Sendable, Hashable {
        /// The model, such as `WMM-2025`.
        public var model: String
        /// Degrees east of true north.
        public var declination: Double
        /// Degrees below the horizontal.
        public var inclination: Double
        /// The total intensity, µT.
        public var field: Double
        /// Whether the date is inside the model's five years.
        public var valid: Bool
        /// NOAA's compass zones by the horizontal intensity: `normal`, `caution` (under 6 µT) or
        /// `blackout` (under 2 µT: a compass heading means nothing there).
        public var zone: String
        /// Whether its declination is the one `xTrueNorthZVertical` turns by (false: motiond.conf sets one).
        public var applied: Bool
        /// Where the place came from (1.9; nil from an older daemon, whose place was always configured).
        public var source: Source?

        /// Where a place came from.
        public enum Source: String, Codable, Sendable, Hashable {
            /// motiond.conf's `location`.
            case configuration
            /// GeoClue, asked while a client watches `xTrueNorthZVertical`.
            case geoclue
        }

        /// An account of the model `model`'s field: `declination` and `inclination` in degrees, `field` in µT.
        public init(model: String, declination: Double, inclination: Double, field: Double, valid: Bool, zone: String, applied: Bool, source: Source? = nil) {
            (self.model, self.declination, self.inclination, self.field, self.valid, self.zone, self.applied, self.source) =
                (model, declination, inclination, field, valid, zone, applied, source)
        }
    }

    /// The gyroscope axis check's verdict.
    public struct GyroscopeAxes: Codable, Sendable, Hashable {
        public var agree: Bool
        /// Where they disagree: the matrix (row order, motiond's device frame) the gyroscope's readings
        /// are to be multiplied by to agree.
        public var mendingMatrix: [Double]?

        public init(agree: Bool, mendingMatrix: [Double]?) {
            self.agree = agree
            self.mendingMatrix = mendingMatrix
        }
    }

    /// The streams and the parts of `MOTION` the machine's sensors cannot give.
    public struct Unavailable: Codable, Sendable, Hashable {
        /// Stream name → the reason, as an `ERROR` to a `WATCH` of it says.
        public var streams: [String: String]
        /// The parts of `MOTION` (in a north frame) this machine cannot give; empty when it has no
        /// accelerometer (then `motion` is among `streams`).
        public var motion: UnavailableOutputs

        public init(streams: [String: String], motion: UnavailableOutputs) {
            self.streams = streams
            self.motion = motion
        }
    }

    public init(
        id: RequestID?, uptime: Double, clients: Int, sensors: [Sensor], dropped: Int, calibration: Calibration?,
        unavailable: Unavailable? = nil, gyroscopeAxes: GyroscopeAxes? = nil, magnetometerAxes: GyroscopeAxes? = nil, geomagnetic: Geomagnetic? = nil
    ) {
        self.id = id
        self.uptime = uptime
        self.clients = clients
        self.sensors = sensors
        self.dropped = dropped
        self.calibration = calibration
        self.unavailable = unavailable
        self.gyroscopeAxes = gyroscopeAxes
        self.magnetometerAxes = magnetometerAxes
        self.geomagnetic = geomagnetic
    }
}

/// Turns messages into lines and back.
public enum Wire {
    /// The message as one line, `\n` included, `class` first.
    public static func encode<M: ServerMessage>(_ message: M) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        let body = try encoder.encode(message)
        // `{"class":"…",` then the body without its opening brace.
        var line = Array("{\"class\":\"\(M.className)\"".utf8)
        if body.count > 2 { line.append(UInt8(ascii: ",")) }
        line.append(contentsOf: body.dropFirst())
        line.append(UInt8(ascii: "\n"))
        return line
    }

    /// The `class` of a line, if it is a JSON object that has one.
    public static func className(of line: [UInt8]) -> String? {
        struct Header: Decodable { var `class`: String? }
        return (try? JSONDecoder().decode(Header.self, from: Data(line)))?.class
    }

    /// Decodes a line as a message of type `M` (the caller checked its class).
    public static func decode<M: ServerMessage>(_ type: M.Type, from line: [UInt8]) throws -> M {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(M.self, from: Data(line))
    }
}
