/// The kinds of motion sensor motiond reads.
public enum SensorKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// Specific force in m/s² (+9.81 on the up axis at rest, as IIO and Android report it).
    case accelerometer
    /// Angular velocity in rad/s, right-handed about each device axis.
    case gyroscope
    /// Magnetic flux density in µT.
    case magnetometer
    /// Proximity: a dimensionless raw reading (larger is nearer) and a near/far state.
    case proximity
    /// Ambient light: illuminance in lux, or the raw reading where the driver gives no scale.
    case light
    /// Air pressure in kPa (the IIO ABI's unit and CoreMotion's), for the altimeter.
    case pressure
    /// A sensor hub's own compass: its tilt-compensated heading, degrees clockwise from magnetic north.
    case compass
    /// An accelerometer's own step counter (`in_steps_input`): steps since the chip began counting,
    /// read when its events say it counted, not sampled (protocol 1.11). x is the count in
    /// [0, modulus) (a counter read as signed is taken modulo its width), y the counter's modulus
    /// (2^24 for the bma400, 2^16 for the bmi270; 0 where unknown), by which a wrap is told from a reset.
    case stepCounter = "step-counter"
    /// An accelerometer's own activity classes (`in_activity_{still,walking,running}_input`): the
    /// confidence of each, percent, as x (still), y (walking) and z (running) (protocol 1.11).
    case activityRecognizer = "activity-recognizer"
    /// A chip's own significant-motion sensor: one reading of 1 per event, a one-shot trigger armed
    /// only while watched (protocol 1.11).
    case significantMotion = "significant-motion"
    /// A chip's own on-body detection (the ChromeOS EC's): 1 while the device is worn or held, 0
    /// while it is off the body (protocol 1.11).
    case onBody = "on-body"
    /// An HID human-presence sensor (`hid-sensor-prox`): x whether a person is there (0 or 1), y
    /// their distance in metres and z their attention in percent, each NaN where the sensor has no
    /// such channel (protocol 1.11).
    case humanPresence = "human-presence"

    /// The kind's place in `allCases`, for tables indexed by kind.
    public var index: Int {
        switch self {
        case .accelerometer: 0
        case .gyroscope: 1
        case .magnetometer: 2
        case .proximity: 3
        case .light: 4
        case .pressure: 5
        case .compass: 6
        case .stepCounter: 7
        case .activityRecognizer: 8
        case .significantMotion: 9
        case .onBody: 10
        case .humanPresence: 11
        }
    }

    /// Whether samples of this kind carry three axes in the device's frame, to which a mount matrix
    /// applies (`false` for the scalars, and for the activity classes and a person's presence, whose
    /// three numbers are no axes).
    public var isVector: Bool { self == .accelerometer || self == .gyroscope || self == .magnetometer }

    /// Whether the kind is a chip's own function, read from sysfs when the chip's events say it
    /// changed (and at the interval a client asks), never sampled at a rate: the step counter, the
    /// activity classes, significant motion, on-body detection.
    public var isChipFunction: Bool { self == .stepCounter || self == .activityRecognizer || self == .significantMotion || self == .onBody }

    /// The largest magnitude a real sensor of this kind reports, in its SI unit (m/s², rad/s, µT):
    /// above it a reading is a glitch (a bus error, a garbage register) and is dropped. Set well
    /// beyond the widest ranges in use: ±200 g accelerometers, ±4000 °/s gyroscopes, magnetometers
    /// that saturate near 5 mT; light far beyond sunlight (1.2e5 lux) and any 32-bit raw count (its
    /// unit may be the vendor's); pressure far beyond deep-water gauges (10 MPa; a pressure must
    /// also be above 0); a compass heading within one turn. Proximity is not bounded.
    public var plausibleMagnitude: Double {
        switch self {
        case .accelerometer: 2500
        case .gyroscope: 100
        case .magnetometer: 10_000
        case .light: 1e12
        case .pressure: 10_000
        case .compass: 360
        case .proximity: .infinity
        // A 24-bit counter (bma400) beside its modulus, 2^24 each; 100 % for a class; 1 for an event;
        // a distance within 100 m (NaN, a channel the sensor lacks, passes: NaN is not above it).
        case .stepCounter: 16_777_216 * 2
        case .activityRecognizer: 100
        case .significantMotion, .onBody: 1
        case .humanPresence: 100
        }
    }
}
