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

/// The attitude part of `MOTION`.
public struct AttitudeMessage: Codable, Sendable, Hashable {
    /// Device → reference frame.
    public var quaternion: Quaternion
    /// Radians, CoreMotion's conventions.
    public var roll: Double
    public var pitch: Double
    public var yaw: Double
    /// CoreMotion's rotation matrix (reference → device); on the wire, nine numbers row by row.
    public var rotationMatrix: Matrix3

    public init(quaternion: Quaternion, roll: Double, pitch: Double, yaw: Double, rotationMatrix: Matrix3) {
        self.quaternion = quaternion
        self.roll = roll
        self.pitch = pitch
        self.yaw = yaw
        self.rotationMatrix = rotationMatrix
    }

    enum CodingKeys: String, CodingKey { case quaternion, roll, pitch, yaw, rotationMatrix }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        quaternion = try container.decode(Quaternion.self, forKey: .quaternion)
        roll = try container.decode(Double.self, forKey: .roll)
        pitch = try container.decode(Double.self, forKey: .pitch)
        yaw = try container.decode(Double.self, forKey: .yaw)
        let elements = try container.decode([Double].self, forKey: .rotationMatrix)
        guard elements.count == 9 else {
            throw DecodingError.dataCorruptedError(
                forKey: .rotationMatrix, in: container, debugDescription: "a rotation matrix has 9 numbers, not \(elements.count)")
        }
        rotationMatrix = Matrix3(rowMajor: elements)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(quaternion, forKey: .quaternion)
        try container.encode(roll, forKey: .roll)
        try container.encode(pitch, forKey: .pitch)
        try container.encode(yaw, forKey: .yaw)
        try container.encode(rotationMatrix.rowMajor, forKey: .rotationMatrix)
    }
}

/// The calibrated magnetic field of `MOTION`.
public struct CalibratedFieldMessage: Codable, Sendable, Hashable {
    /// µT, hard iron removed.
    public var field: Vector3
    public var accuracy: MagneticFieldAccuracy

    public init(field: Vector3, accuracy: MagneticFieldAccuracy) {
        self.field = field
        self.accuracy = accuracy
    }
}

/// `MOTION`: fused device motion.
public struct MotionMessage: ServerMessage {
    public static let className = "MOTION"
    /// ns, CLOCK_MONOTONIC.
    public var timestamp: Int64
    public var frame: AttitudeReferenceFrame
    public var attitude: AttitudeMessage
    /// g, CoreMotion's sign.
    public var gravity: Vector3
    /// g.
    public var userAcceleration: Vector3
    /// rad/s, bias removed.
    public var rotationRate: Vector3
    public var magneticField: CalibratedFieldMessage
    /// Degrees in [0, 360), north frames only.
    public var heading: Double?
    /// What the machine's sensors cannot give, field name → reason; absent when everything is there.
    public var unavailable: UnavailableOutputs?

    public init(
        timestamp: Int64, frame: AttitudeReferenceFrame, attitude: AttitudeMessage, gravity: Vector3,
        userAcceleration: Vector3, rotationRate: Vector3, magneticField: CalibratedFieldMessage, heading: Double?,
        unavailable: UnavailableOutputs? = nil
    ) {
        self.unavailable = unavailable?.isEmpty == true ? nil : unavailable
        self.timestamp = timestamp
        self.frame = frame
        self.attitude = attitude
        self.gravity = gravity
        self.userAcceleration = userAcceleration
        self.rotationRate = rotationRate
        self.magneticField = magneticField
        self.heading = heading
    }
}

/// `ACCELEROMETER`: raw acceleration, g, CoreMotion's sign.
public struct AccelerometerMessage: ServerMessage {
    public static let className = "ACCELEROMETER"
    public var timestamp: Int64
    public var acceleration: Vector3
    public init(timestamp: Int64, acceleration: Vector3) {
        self.timestamp = timestamp
        self.acceleration = acceleration
    }
}

/// `GYROSCOPE`: raw rotation rate, rad/s.
public struct GyroscopeMessage: ServerMessage {
    public static let className = "GYROSCOPE"
    public var timestamp: Int64
    public var rotationRate: Vector3
    public init(timestamp: Int64, rotationRate: Vector3) {
        self.timestamp = timestamp
        self.rotationRate = rotationRate
    }
}

/// `MAGNETOMETER`: raw magnetic field, µT.
public struct MagnetometerMessage: ServerMessage {
    public static let className = "MAGNETOMETER"
    public var timestamp: Int64
    public var magneticField: Vector3
    public init(timestamp: Int64, magneticField: Vector3) {
        self.timestamp = timestamp
        self.magneticField = magneticField
    }
}

/// `PROXIMITY`: near or far.
public struct ProximityMessage: ServerMessage {
    public static let className = "PROXIMITY"
    public var timestamp: Int64
    public var near: Bool
    /// The raw reading.
    public var value: Double
    public init(timestamp: Int64, near: Bool, value: Double) {
        self.timestamp = timestamp
        self.near = near
        self.value = value
    }
}

/// `LIGHT`: ambient light (protocol 1.2).
public struct LightMessage: ServerMessage {
    public static let className = "LIGHT"
    /// `lux`, or `vendor` where the driver gives no scale (the raw reading, comparable only with itself).
    public enum Unit: String, Codable, Sendable, Hashable {
        case lux, vendor
    }
    public var timestamp: Int64
    /// In `unit`.
    public var illuminance: Double
    public var unit: Unit
    public init(timestamp: Int64, illuminance: Double, unit: Unit) {
        self.timestamp = timestamp
        self.illuminance = illuminance
        self.unit = unit
    }
}

/// `ORIENTATION`: the screen orientation.
public struct OrientationMessage: ServerMessage {
    public static let className = "ORIENTATION"
    public var timestamp: Int64
    public var orientation: ScreenOrientation
    public init(timestamp: Int64, orientation: ScreenOrientation) {
        self.timestamp = timestamp
        self.orientation = orientation
    }
}

/// `TILT`: how far the screen leans back or forward (protocol 1.1).
public struct TiltMessage: ServerMessage {
    public static let className = "TILT"
    public var timestamp: Int64
    public var tilt: ScreenTilt
    public init(timestamp: Int64, tilt: ScreenTilt) {
        self.timestamp = timestamp
        self.tilt = tilt
    }
}

/// `PEDOMETER`: the steps counted since the daemon started (protocol 1.4).
public struct PedometerMessage: ServerMessage {
    public static let className = "PEDOMETER"
    /// The last step's instant, ns.
    public var timestamp: Int64
    /// Steps since the daemon started.
    public var steps: Int
    /// Metres walked: the steps times the step length.
    public var distance: Double
    /// Steps per second; `nil` before the third step.
    public var cadence: Double?
    /// Seconds per metre; `nil` before the third step.
    public var pace: Double?
    /// Floors (about 3 m) climbed on foot since the pedometer started (protocol 1.5); `nil` without
    /// a pressure sensor.
    public var floorsAscended: Int?
    /// Floors gone down on foot, as `floorsAscended`.
    public var floorsDescended: Int?
    public init(
        timestamp: Int64, steps: Int, distance: Double, cadence: Double?, pace: Double?, floorsAscended: Int? = nil,
        floorsDescended: Int? = nil
    ) {
        self.timestamp = timestamp
        self.steps = steps
        self.distance = distance
        self.cadence = cadence
        self.pace = pace
        self.floorsAscended = floorsAscended
        self.floorsDescended = floorsDescended
    }
}

/// `GESTURE`: a gesture made with the device (protocol 1.5).
public struct GestureMessage: ServerMessage {
    public static let className = "GESTURE"
    /// The sample that completed the gesture, ns.
    public var timestamp: Int64
    public var gesture: Gesture
    public init(timestamp: Int64, gesture: Gesture) {
        self.timestamp = timestamp
        self.gesture = gesture
    }
}

/// `ALTITUDE`: a pressure reading and the altitude it means in the standard atmosphere (protocol 1.5).
public struct AltitudeMessage: ServerMessage {
    public static let className = "ALTITUDE"
    /// When the pressure was read, ns.
    public var timestamp: Int64
    /// The pressure read, kPa.
    public var pressure: Double
    /// The altitude at which the standard atmosphere, with the configured sea-level pressure, has
    /// `pressure`, m (geopotential). Differences of it are the relative altitude.
    public var altitude: Double
    /// One standard deviation of the readings' noise, m; `nil` until the third reading.
    public var precision: Double?
    public init(timestamp: Int64, pressure: Double, altitude: Double, precision: Double?) {
        self.timestamp = timestamp
        self.pressure = pressure
        self.altitude = altitude
        self.precision = precision
    }
}

/// `ACTIVITY`: what the person carrying the device does, how sure, since when (protocol 1.4).
public struct ActivityMessage: ServerMessage {
    public static let className = "ACTIVITY"
    /// When it was decided, ns.
    public var timestamp: Int64
    /// What the person does.
    public var activity: MotionActivityKind
    /// How sure.
    public var confidence: MotionActivityConfidence
    /// When the activity began, ns.
    public var start: Int64
    public init(timestamp: Int64, activity: MotionActivityKind, confidence: MotionActivityConfidence, start: Int64) {
        self.timestamp = timestamp
        self.activity = activity
        self.confidence = confidence
        self.start = start
    }
}

/// `HINGE`: a 2-in-1's hinge angle, degrees, and mode (protocol 1.1).
public struct HingeMessage: ServerMessage {
    public static let className = "HINGE"
    public var timestamp: Int64
    /// Degrees in [0, 360]: 0 shut, 180 flat, 360 folded back.
    public var angle: Double
    public var mode: HingeMode
    public init(timestamp: Int64, angle: Double, mode: HingeMode) {
        self.timestamp = timestamp
        self.angle = angle
        self.mode = mode
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

/// `SNAPSHOT`: the reply to `POLL`.
public struct Snapshot: ServerMessage {
    public static let className = "SNAPSHOT"
    public var id: RequestID?
    public var motion: MotionMessage?
    public var accelerometer: AccelerometerMessage?
    public var gyroscope: GyroscopeMessage?
    public var magnetometer: MagnetometerMessage?
    public var proximity: ProximityMessage?
    public var light: LightMessage?
    public var orientation: OrientationMessage?
    public var tilt: TiltMessage?
    public var hinge: HingeMessage?
    public var pedometer: PedometerMessage?
    public var activity: ActivityMessage?
    public var altitude: AltitudeMessage?
    public var gesture: GestureMessage?

    public init(id: RequestID?) { self.id = id }
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

        public init(device: String, kinds: [SensorKind], mode: String, rate: Double, measuredRate: Double?) {
            self.device = device
            self.kinds = kinds
            self.mode = mode
            self.rate = rate
            self.measuredRate = measuredRate
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
        unavailable: Unavailable? = nil
    ) {
        self.id = id
        self.uptime = uptime
        self.clients = clients
        self.sensors = sensors
        self.dropped = dropped
        self.calibration = calibration
        self.unavailable = unavailable
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
