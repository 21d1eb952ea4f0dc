/// The clock a timestamp is counted on. motiond uses one clock for every sample:
/// `monotonic` (CLOCK_MONOTONIC), set as the IIO `current_timestamp_clock` of each device it buffers.
public enum TimestampClock: String, Sendable, Hashable, Codable {
    /// CLOCK_MONOTONIC: seconds since boot, not counting suspend.
    case monotonic
    /// CLOCK_BOOTTIME: like monotonic, but counting suspend.
    case boottime
}

/// Identifies an IIO device by its kernel number N (`iio:deviceN`).
public struct DeviceNumber: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    /// The N of `iio:deviceN`.
    public var rawValue: Int32

    /// Creates the identifier for `iio:device<rawValue>`.
    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// Parses `iio:deviceN`; `nil` for any other name (a trigger, say).
    public init?(sysname: String) {
        guard sysname.hasPrefix("iio:device"), let n = Int32(sysname.dropFirst("iio:device".count)), n >= 0
        else { return nil }
        self.rawValue = n
    }

    /// `iio:deviceN`, the kernel's name for the device.
    public var sysname: String { "iio:device\(rawValue)" }
    public var description: String { sysname }
    public static func < (a: DeviceNumber, b: DeviceNumber) -> Bool { a.rawValue < b.rawValue }
}

/// One reading of one sensor, in SI units in the device frame (after the mount matrix).
///
/// A fixed-size value: making, copying and passing one allocates nothing.
public struct SensorSample: Sendable, Hashable {
    /// What was measured.
    public var kind: SensorKind
    /// The IIO device that measured it.
    public var device: DeviceNumber
    /// When it was measured, in integer nanoseconds of `TimestampClock.monotonic`.
    public var timestamp: Int64
    /// The reading: m/s² (specific force) for the accelerometer, rad/s for the gyroscope,
    /// µT for the magnetometer; for proximity `x` holds the raw reading and `y`, `z` are 0.
    public var vector: Vector3
    /// Proximity only: whether the reading is at or above the near level (with hysteresis).
    public var isNear: Bool
    /// Whether this is a polled sensor's previous measurement read again (its value held since), not a
    /// new one: a raw stream still carries it; the fusion, which would take it for news, does not.
    public var isRepeat: Bool

    /// Creates a sample; see the properties for units.
    @inlinable
    public init(kind: SensorKind, device: DeviceNumber, timestamp: Int64, vector: Vector3, isNear: Bool = false, isRepeat: Bool = false) {
        self.kind = kind
        self.device = device
        self.timestamp = timestamp
        self.vector = vector
        self.isNear = isNear
        self.isRepeat = isRepeat
    }
}
