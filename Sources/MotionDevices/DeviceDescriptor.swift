import MotionCore

/// How samples are taken from a device.
public enum CaptureMode: String, Sendable, Hashable, Codable {
    /// Scan elements, a trigger where needed, `/dev/iio:deviceN` read through libiio buffers,
    /// timestamps from the device's timestamp channel.
    case buffered
    /// The channels' sysfs attributes read at the rate, timestamped with CLOCK_MONOTONIC on reading.
    case polled
}

/// One channel of a sensor: where its value is and how to turn it into the IIO unit.
public struct ChannelDescriptor: Sendable, Hashable, Codable {
    /// libiio's channel id, e.g. `accel_x` or `proximity0`.
    public var id: String
    /// The device axis of the channel (before the mount matrix), `nil` for a scalar channel.
    public var axis: Axis?
    /// The sysfs file read in polled mode: `in_accel_x_raw`, or `in_accel_x_input` when that is offered.
    public var valueAttribute: String
    /// Whether `valueAttribute` is a processed `_input` (already in the IIO unit, no scale or offset).
    public var isProcessed: Bool
    /// `_scale` (per axis or shared): IIO unit per count. 1 for processed values.
    public var scale: Double
    /// `_offset`: counts added before scaling. 0 if absent.
    public var offset: Double
    /// Position in a buffered scan, `nil` if the channel is not a scan element.
    public var scanIndex: Int?
    /// Layout in a buffered scan, `nil` if the channel is not a scan element.
    public var scanType: ScanType?

    /// Creates a channel description; see the properties for units.
    public init(
        id: String, axis: Axis?, valueAttribute: String, isProcessed: Bool = false, scale: Double = 1,
        offset: Double = 0, scanIndex: Int? = nil, scanType: ScanType? = nil
    ) {
        self.id = id
        self.axis = axis
        self.valueAttribute = valueAttribute
        self.isProcessed = isProcessed
        self.scale = scale
        self.offset = offset
        self.scanIndex = scanIndex
        self.scanType = scanType
    }

    /// The value in the IIO unit for a raw count: `(raw + offset) × scale`.
    @inlinable
    public func convert(_ raw: Double) -> Double { (raw + offset) * scale }
}

/// One kind of sensor on a device (an IMU device carries an accelerometer and a gyroscope).
public struct SensorDescriptor: Sendable, Hashable, Codable {
    /// What it measures.
    public var kind: SensorKind
    /// Its channels: x, y, z in that order for a vector sensor, one channel for proximity.
    public var channels: [ChannelDescriptor]
    /// The mount matrix as given (identity if none is given), in Linux userspace's frame.
    public var mountMatrix: Matrix3
    /// Where the mount matrix came from: `config:<match>` (motiond.conf), `udev:ACCEL_MOUNT_MATRIX`,
    /// `sysfs:<attribute>` or `identity`.
    public var mountMatrixSource: String
    /// What is applied to every reading: chip axes → motiond's device frame (see `DeviceFrame`).
    public var deviceFrameMatrix: Matrix3
    /// Set when the mount matrix was not a rotation and its z row was completed (see `DeviceFrame`).
    public var mountMatrixCorrection: String?
    /// Proximity only: the raw reading at and above which something is near
    /// (udev `PROXIMITY_NEAR_LEVEL`, else sysfs `in_proximity_nearlevel`); `nil` if neither is given.
    public var nearLevel: Double?
    /// Light only: `true` when the driver gives no scale, so readings are the raw counts (the
    /// "vendor" unit), not lux.
    public var readsVendorUnits: Bool?

    /// Creates a sensor description; see the properties for units.
    public init(
        kind: SensorKind, channels: [ChannelDescriptor], mountMatrix: Matrix3 = .identity,
        mountMatrixSource: String = "identity", deviceFrame: DeviceFrame.Transform = .identity, nearLevel: Double? = nil,
        readsVendorUnits: Bool? = nil
    ) {
        self.readsVendorUnits = readsVendorUnits
        self.kind = kind
        self.channels = channels
        self.mountMatrix = mountMatrix
        self.mountMatrixSource = mountMatrixSource
        self.deviceFrameMatrix = deviceFrame.matrix
        self.mountMatrixCorrection = deviceFrame.correction
        self.nearLevel = nearLevel
    }
}

/// An IIO device that carries at least one motion or proximity sensor.
public struct DeviceDescriptor: Sendable, Hashable {
    /// Its kernel number, `iio:deviceN`.
    public var number: DeviceNumber
    /// The driver's name (`name` attribute), e.g. `accel_3d` or `bmi160`.
    public var name: String
    /// Its sysfs path as udev reports it.
    public var syspath: String
    /// Its `label` attribute (`accel-display`, `accel-base`, …), `nil` if it has none.
    public var label: String?
    /// Where it sits in a 2-in-1: udev `ACCEL_LOCATION`, else the `label`, else sysfs `location`
    /// (cros-ec); `display` when nothing says (as iio-sensor-proxy assumes).
    public var location: SensorLocation
    /// The sensors it carries.
    public var sensors: [SensorDescriptor]
    /// The rates it offers (`sampling_frequency_available`), `nil` if it does not say.
    public var availableRates: AvailableRates?
    /// Its current sampling frequency in Hz, `nil` if it has none.
    public var samplingFrequency: Double?
    /// The attribute that sets the rate: `sampling_frequency`, or `in_<type>_sampling_frequency`
    /// (HID sensor hubs); `nil` if the device has neither.
    public var samplingFrequencyAttribute: String?
    /// The mode a capture will try first: buffered where the device offers it, else polled.
    public var captureMode: CaptureMode
    /// The timestamp channel's layout when the device has one in its scans.
    public var timestampScan: TimestampScan?
    /// The trigger a buffered capture uses: the current one, or the device's own if none is set.
    public var trigger: String?
    /// Problems that made part of the device unusable (a kind skipped, buffered mode unavailable).
    public var problems: [DeviceError]

    /// Creates a device description; see the properties for units.
    public init(
        number: DeviceNumber, name: String, syspath: String, label: String? = nil, location: SensorLocation = .display,
        sensors: [SensorDescriptor],
        availableRates: AvailableRates? = nil, samplingFrequency: Double? = nil,
        samplingFrequencyAttribute: String? = nil, captureMode: CaptureMode = .polled,
        timestampScan: TimestampScan? = nil, trigger: String? = nil, problems: [DeviceError] = []
    ) {
        self.number = number
        self.name = name
        self.syspath = syspath
        self.label = label
        self.location = location
        self.sensors = sensors
        self.availableRates = availableRates
        self.samplingFrequency = samplingFrequency
        self.samplingFrequencyAttribute = samplingFrequencyAttribute
        self.captureMode = captureMode
        self.timestampScan = timestampScan
        self.trigger = trigger
        self.problems = problems
    }

    /// The sensor of a kind, if the device carries it.
    public func sensor(_ kind: SensorKind) -> SensorDescriptor? { sensors.first { $0.kind == kind } }

    /// The kinds the device carries.
    public var kinds: [SensorKind] { sensors.map(\.kind) }
}

/// Where the timestamp is in a buffered scan.
public struct TimestampScan: Sendable, Hashable, Codable {
    /// Position in the scan.
    public var index: Int
    /// Layout (normally `le:s64/64>>0`).
    public var scanType: ScanType

    /// Creates a timestamp layout.
    public init(index: Int, scanType: ScanType) {
        self.index = index
        self.scanType = scanType
    }
}

/// Where a sensor sits in a device whose screen folds against a base (a 2-in-1 or a laptop).
public enum SensorLocation: String, Sendable, Hashable, Codable {
    /// In the lid or tablet, with the screen: the sensor that decides the screen's orientation.
    case display
    /// In the base, under the keyboard.
    case base
}
