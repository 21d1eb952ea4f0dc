import FoundationEssentials
import MotionCore

// Every stream in one file: its name (`StreamKind`), its entry in the stream table (what it needs of the
// sensors, how they are sampled, its message: the catalogue), the message itself, and the `SNAPSHOT`
// that holds them by stream. A new stream adds those here, its case in `AnyServerMessage` (and in its
// `open`), and its values in the hub's stage that makes them; the wire's decoder, the snapshot, the
// client library's updates and motionctl's view follow from the catalogue.

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
    /// Whether a person is at the machine, their attention and distance (protocol 1.11).
    case presence
    /// Android's significant motion as a one-shot trigger: armed by a watch, sent once, then ended
    /// for that client (protocol 1.11).
    case significantMotion = "significant_motion"

    /// The stream's place in `allCases`, for tables indexed by stream (the snapshot, the stream table).
    public var index: Int {
        // Every case is in `allCases`: the search always finds it, in at most `allCases.count` steps.
        Self.ordered.firstIndex(of: self)!
    }

    /// `allCases` made once: the synthesized property builds a new array at each call.
    private static let ordered = allCases

    /// How many streams there are (`allCases.count`, counted once), for tables indexed by stream.
    public static let caseCount = ordered.count

    /// The stream whose message is of type `type`, if one is (none for a reply).
    public init?(messageType type: any ServerMessage.Type) {
        guard let index = Self.table.firstIndex(where: { $0.message.type == type }) else { return nil }
        self = Self.ordered[index]
    }

    /// Decodes a stream's name; one that is no stream is refused naming it and the streams there are
    /// (Swift's own message names the type, not the choices, and shows `""` as nothing at all).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let name = try container.decode(String.self)
        guard let kind = StreamKind(rawValue: name) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "\"\(name.echoed)\" is not a stream; streams are \(Self.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self = kind
    }
}

/// The stream table: what each stream needs of the sensors and how they are sampled for it.
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
        /// As `events`, but each reading read the moment it comes (no batching), at a rate that tells a
        /// change within 100 ms: a person's presence, to which a screen's lock answers.
        case immediate
    }

    /// One stream's entry in the table.
    public struct Descriptor: Sendable {
        /// Its message: the class, its type, how it is read and how it becomes an `AnyServerMessage`.
        public var message: MessageClass
        /// The sensors it cannot go without, where none of `preferred` is there.
        public var required: Set<SensorKind>
        /// Chip functions that give the stream better (without waking for samples), in order of
        /// preference: the first the machine has is used instead of `required` (the chip's step
        /// counter for `pedometer`, an HID human-presence sensor for `presence`).
        public var preferred: [Set<SensorKind>] = []
        /// The sensors it uses where the machine has them.
        public var optional: Set<SensorKind> = []
        /// How its sensors are sampled.
        public var sampling: Sampling
        /// The sensor whose readings it carries as they are (what a recording holds), if it does.
        public var rawSensor: SensorKind?

        init<M: ServerMessage>(
            _ message: @escaping @Sendable (M) -> AnyServerMessage, required: Set<SensorKind>, preferred: [Set<SensorKind>] = [],
            optional: Set<SensorKind> = [], sampling: Sampling, rawSensor: SensorKind? = nil
        ) {
            self.message = MessageClass(message)
            self.required = required
            self.preferred = preferred
            self.optional = optional
            self.sampling = sampling
            self.rawSensor = rawSensor
        }
    }

    /// The stream's entry.
    public var descriptor: Descriptor { Self.table[index] }

    /// Whether the stream is an event stream (state at start, then each change) rather than periodic.
    public var isEventStream: Bool { descriptor.sampling != .asked }

    /// Whether a new watcher gets the stream's state first: an event stream's, except a moment's.
    public var startsWithState: Bool { isEventStream && descriptor.sampling != .moments }

    /// The entries, in the order of `allCases`.
    fileprivate static let table = allCases.map(\.entry)

    /// The catalogue: each stream's entry, its message named by its case of `AnyServerMessage`.
    private var entry: Descriptor {
        switch self {
        // A sensor hub's own compass gives the heading only where no magnetometer does (CapturePlan).
        case .motion:
            Descriptor(AnyServerMessage.motion, required: [.accelerometer], optional: [.gyroscope, .magnetometer, .compass], sampling: .asked)
        case .accelerometer: Descriptor(AnyServerMessage.accelerometer, required: [.accelerometer], sampling: .asked, rawSensor: .accelerometer)
        case .gyroscope: Descriptor(AnyServerMessage.gyroscope, required: [.gyroscope], sampling: .asked, rawSensor: .gyroscope)
        case .magnetometer: Descriptor(AnyServerMessage.magnetometer, required: [.magnetometer], sampling: .asked, rawSensor: .magnetometer)
        case .proximity: Descriptor(AnyServerMessage.proximity, required: [.proximity], sampling: .events, rawSensor: .proximity)
        case .light: Descriptor(AnyServerMessage.light, required: [.light], sampling: .events)
        case .orientation: Descriptor(AnyServerMessage.orientation, required: [.accelerometer], sampling: .events)
        case .tilt: Descriptor(AnyServerMessage.tilt, required: [.accelerometer], sampling: .events)
        case .hinge: Descriptor(AnyServerMessage.hinge, required: [.accelerometer], sampling: .asked)
        case .pedometer:
            Descriptor(AnyServerMessage.pedometer, required: [.accelerometer], preferred: [[.stepCounter]], optional: [.pressure], sampling: .gait)
        case .activity: Descriptor(AnyServerMessage.activity, required: [.accelerometer], preferred: [[.activityRecognizer]], sampling: .gait)
        case .altitude: Descriptor(AnyServerMessage.altitude, required: [.pressure], sampling: .asked, rawSensor: .pressure)
        case .gesture: Descriptor(AnyServerMessage.gesture, required: [.accelerometer], optional: [.onBody], sampling: .moments)
        case .presence: Descriptor(AnyServerMessage.presence, required: [.proximity], preferred: [[.humanPresence]], sampling: .immediate)
        case .significantMotion:
            Descriptor(AnyServerMessage.significantMotion, required: [.accelerometer], preferred: [[.significantMotion]], sampling: .moments)
        }
    }
}

/// The attitude part of `MOTION`.
public struct AttitudeMessage: Codable, Sendable, Hashable {
    /// Device → reference frame.
    public var quaternion: Quaternion
    /// Radians about y in (−π, π], CoreMotion's conventions.
    public var roll: Double
    /// Radians about x in [−π/2, π/2].
    public var pitch: Double
    /// Radians about z in (−π, π].
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
    /// How well the bias is known: uncalibrated, low, medium, high.
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
    /// The reference frame of `attitude` and `heading`.
    public var frame: AttitudeReferenceFrame
    /// Device → `frame`.
    public var attitude: AttitudeMessage
    /// g, CoreMotion's sign.
    public var gravity: Vector3
    /// g.
    public var userAcceleration: Vector3
    /// rad/s, bias removed.
    public var rotationRate: Vector3
    /// µT, the estimated bias removed, with its accuracy.
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
    /// ns, CLOCK_MONOTONIC.
    public var timestamp: Int64
    /// g, CoreMotion's sign (−1 g along up at rest).
    public var acceleration: Vector3
    public init(timestamp: Int64, acceleration: Vector3) {
        self.timestamp = timestamp
        self.acceleration = acceleration
    }
}

/// `GYROSCOPE`: raw rotation rate, rad/s.
public struct GyroscopeMessage: ServerMessage {
    public static let className = "GYROSCOPE"
    /// ns, CLOCK_MONOTONIC.
    public var timestamp: Int64
    /// rad/s, right-handed about each device axis, the bias not removed.
    public var rotationRate: Vector3
    public init(timestamp: Int64, rotationRate: Vector3) {
        self.timestamp = timestamp
        self.rotationRate = rotationRate
    }
}

/// `MAGNETOMETER`: raw magnetic field, µT.
public struct MagnetometerMessage: ServerMessage {
    public static let className = "MAGNETOMETER"
    /// ns, CLOCK_MONOTONIC.
    public var timestamp: Int64
    /// µT, the bias not removed.
    public var magneticField: Vector3
    public init(timestamp: Int64, magneticField: Vector3) {
        self.timestamp = timestamp
        self.magneticField = magneticField
    }
}

/// `PROXIMITY`: near or far.
public struct ProximityMessage: ServerMessage {
    public static let className = "PROXIMITY"
    /// ns, CLOCK_MONOTONIC.
    public var timestamp: Int64
    /// Whether something is near.
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
    /// ns, CLOCK_MONOTONIC.
    public var timestamp: Int64
    /// In `unit`.
    public var illuminance: Double
    /// What `illuminance` is in.
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
    /// ns, CLOCK_MONOTONIC.
    public var timestamp: Int64
    /// Which edge of the screen is up.
    public var orientation: ScreenOrientation
    public init(timestamp: Int64, orientation: ScreenOrientation) {
        self.timestamp = timestamp
        self.orientation = orientation
    }
}

/// `TILT`: how far the screen leans back or forward (protocol 1.1).
public struct TiltMessage: ServerMessage {
    public static let className = "TILT"
    /// ns, CLOCK_MONOTONIC.
    public var timestamp: Int64
    /// How far the screen leans.
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
    /// Which gesture.
    public var gesture: Gesture
    public init(timestamp: Int64, gesture: Gesture) {
        self.timestamp = timestamp
        self.gesture = gesture
    }
}

/// `PRESENCE`: whether a person is at the machine (protocol 1.11).
public struct PresenceMessage: ServerMessage {
    public static let className = "PRESENCE"
    /// Where the presence is told from.
    public enum Source: String, Codable, Sendable, Hashable {
        /// An HID human-presence sensor (`hid-sensor-prox`).
        case humanPresence = "human-presence"
        /// A proximity sensor: present while it says near.
        case proximity
    }
    /// The reading that made the change, ns.
    public var timestamp: Int64
    /// Whether a person is there.
    public var present: Bool
    /// Whether they look at the screen; nil where the sensor has no attention channel.
    public var attention: Bool?
    /// How far they are, m; nil where the sensor gives no distance.
    public var distance: Double?
    /// Where it is told from.
    public var source: Source
    public init(timestamp: Int64, present: Bool, attention: Bool? = nil, distance: Double? = nil, source: Source) {
        self.timestamp = timestamp
        self.present = present
        self.attention = attention
        self.distance = distance
        self.source = source
    }
}

/// `SIGNIFICANT_MOTION`: Android's significant motion, once per arming (protocol 1.11).
public struct SignificantMotionMessage: ServerMessage {
    public static let className = "SIGNIFICANT_MOTION"
    /// What told it.
    public enum Source: String, Codable, Sendable, Hashable {
        /// The chip's own significant-motion sensor.
        case significantMotion = "significant-motion"
        /// The step detector on the accelerometer: a walk or run confirmed.
        case accelerometer
    }
    /// The chip's event's instant, or the sample's that confirmed the walk, ns.
    public var timestamp: Int64
    /// What told it.
    public var source: Source
    public init(timestamp: Int64, source: Source) {
        self.timestamp = timestamp
        self.source = source
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
    /// ns, CLOCK_MONOTONIC.
    public var timestamp: Int64
    /// Degrees in [0, 360]: 0 shut, 180 flat, 360 folded back.
    public var angle: Double
    /// Closed, laptop, tent or tablet, by the angle.
    public var mode: HingeMode
    /// What the angle comes from (protocol 1.9; nil from an older daemon): the display's and the
    /// base's acceleration, g, CoreMotion's sign, each in its own frame (its mount matrix applied),
    /// low-passed. Folded right back, the two read the same where both matrices are right.
    public var display: Vector3?
    /// The base's, as `display`.
    public var base: Vector3?
    public init(timestamp: Int64, angle: Double, mode: HingeMode, display: Vector3? = nil, base: Vector3? = nil) {
        self.timestamp = timestamp
        self.angle = angle
        self.mode = mode
        self.display = display
        self.base = base
    }
}

/// `SNAPSHOT`: the reply to `POLL`: the latest message of each stream asked for, under the stream's
/// name.
public struct Snapshot: ServerMessage {
    public static let className = "SNAPSHOT"
    /// The `POLL`'s id, if it had one.
    public var id: RequestID?
    /// Each stream's message at the stream's `index`; nil for a stream not in the snapshot.
    private var messages = [AnyServerMessage?](repeating: nil, count: StreamKind.caseCount)

    public init(id: RequestID?) { self.id = id }

    /// The snapshot of `streams`, each stream's message from `latest`, or nil while one of them has
    /// none. Nothing is built until every stream has a message, so the answer nil allocates nothing:
    /// the hub asks with every sample while a POLL waits for its sensors.
    public init?(id: RequestID?, streams: [StreamKind], latest: (StreamKind) -> AnyServerMessage?) {
        guard streams.allSatisfy({ latest($0) != nil }) else { return nil }
        self.init(id: id)
        for stream in streams {
            guard let message = latest(stream) else { return nil }
            insert(message)
        }
    }

    /// The message of `stream`, if the snapshot has one.
    public subscript(stream: StreamKind) -> AnyServerMessage? { messages[stream.index] }

    /// The message of type `type`'s stream, if the snapshot has one.
    public subscript<M: ServerMessage>(type: M.Type) -> M? {
        StreamKind(messageType: type).flatMap { messages[$0.index]?.payload(as: type) }
    }

    /// Puts a stream's message in its place, replacing the one there; a message of no stream (a
    /// reply, `DROPPED`) has none.
    public mutating func insert(_ message: AnyServerMessage) {
        if let stream = message.stream { messages[stream.index] = message }
    }

    // Named by stream, for readers: the snapshot stores and codes them by `StreamKind`.
    public var motion: MotionMessage? { self[MotionMessage.self] }
    public var accelerometer: AccelerometerMessage? { self[AccelerometerMessage.self] }
    public var gyroscope: GyroscopeMessage? { self[GyroscopeMessage.self] }
    public var magnetometer: MagnetometerMessage? { self[MagnetometerMessage.self] }
    public var proximity: ProximityMessage? { self[ProximityMessage.self] }
    public var light: LightMessage? { self[LightMessage.self] }
    public var orientation: OrientationMessage? { self[OrientationMessage.self] }
    public var tilt: TiltMessage? { self[TiltMessage.self] }
    public var hinge: HingeMessage? { self[HingeMessage.self] }
    public var pedometer: PedometerMessage? { self[PedometerMessage.self] }
    public var activity: ActivityMessage? { self[ActivityMessage.self] }
    public var altitude: AltitudeMessage? { self[AltitudeMessage.self] }
    public var gesture: GestureMessage? { self[GestureMessage.self] }

    /// `id`, or a stream's name.
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.init(stringValue) }
        init?(intValue: Int) { nil }
        static let id = Key("id")
    }

    // `id` first, then the streams in the order of `StreamKind`'s cases, a stream without a message
    // left out: the order and the keys the fields of earlier versions had (docs/protocol.md).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        id = try container.decodeIfPresent(RequestID.self, forKey: .id)
        for stream in StreamKind.allCases {
            // A decoder that converts snake_case (Wire's) hands `significant_motion` over as `significantMotion`.
            let key = container.contains(Key(stream.rawValue)) ? Key(stream.rawValue) : Key(Self.camelCased(stream.rawValue))
            guard container.contains(key), try !container.decodeNil(forKey: key) else { continue }
            messages[stream.index] = try stream.descriptor.message.decode(try container.superDecoder(forKey: key))
        }
    }

    /// `significant_motion` as `JSONDecoder.KeyDecodingStrategy.convertFromSnakeCase` makes it: `significantMotion`.
    private static func camelCased(_ name: String) -> String {
        let words = name.split(separator: "_")
        return words.dropFirst().reduce(String(words.first ?? "")) { $0 + $1.prefix(1).uppercased() + $1.dropFirst() }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encodeIfPresent(id, forKey: .id)
        for stream in StreamKind.allCases {
            guard let message = messages[stream.index]?.message else { continue }
            try container.encode(message, forKey: Key(stream.rawValue))
        }
    }
}
