import CLibIIO
import MotionCore

/// What the device layer knows about one kind of IIO channel: how to recognise it, where its mount
/// matrix lives, and how to turn its IIO unit into SI. One conforming type per file; every driver is
/// listed in `SensorDrivers.all`.
protocol SensorDriver: Sendable {
    /// The kind of sample the channels produce.
    var kind: SensorKind { get }
    /// libiio's channel type (`IIO_ACCEL`, …).
    var channelType: iio_chan_type { get }
    /// The channel-type word in sysfs names (`accel` in `in_accel_x_raw`).
    var sysfsName: String { get }
    /// Multiplier from the IIO ABI's unit for this type to motiond's SI unit.
    var unitToSI: Double { get }
    /// Every channel-type word the driver reads under, `sysfsName` first (a light sensor's fallback
    /// `intensity` beside `illuminance`): where the type's shared attributes (`in_<word>_sampling_frequency`,
    /// `in_<word>_hysteresis`) are looked for.
    var sysfsNames: [String] { get }
    /// The channels of a device this driver reads, of all its input channels (empty: none).
    func channels(among channels: [any ChannelInfo]) -> [any ChannelInfo]
    /// The channels it reads of a device named `deviceName` (its `name` attribute): some kinds are
    /// told apart by the driver that made the device (`prox` is a human-presence sensor, not a
    /// proximity sensor). By default, `channels(among:)`.
    func channels(among channels: [any ChannelInfo], deviceName: String) -> [any ChannelInfo]
    /// A channel that has no value file, only an event (libiio does not list it), found in `sysfs`;
    /// nil by default.
    func eventOnlyChannel(device: String, sysfs: Sysfs) -> ChannelDescriptor?
    /// Which component of the sample a channel of a scalar kind gives, where the kind's components
    /// are separate channels (activity classes, a person's presence); nil by default.
    func component(of channel: any ChannelInfo) -> Axis?
}

extension SensorDriver {
    /// Whether a channel is three-axis (x, y, z modifiers) or scalar.
    var isVector: Bool { kind.isVector }

    /// Every channel of the driver's type.
    func channels(among channels: [any ChannelInfo]) -> [any ChannelInfo] {
        channels.filter { $0.type == channelType }
    }

    /// Only `sysfsName`.
    var sysfsNames: [String] { [sysfsName] }

    func channels(among channels: [any ChannelInfo], deviceName: String) -> [any ChannelInfo] {
        self.channels(among: channels)
    }

    func eventOnlyChannel(device: String, sysfs: Sysfs) -> ChannelDescriptor? { nil }

    func component(of channel: any ChannelInfo) -> Axis? { nil }

    /// Sysfs attributes that may carry the mount matrix, in order of preference
    /// (after the udev property `ACCEL_MOUNT_MATRIX`).
    var mountMatrixAttributes: [String] {
        ["in_\(sysfsName)_mount_matrix", "mount_matrix", "in_mount_matrix"]
    }

    /// Sysfs attributes of a change threshold below which the device reports nothing (HID sensor
    /// hubs: `hid-sensor-*` drivers; `_relative` is the percentage form of newer hubs).
    var hysteresisAttributes: [String] {
        sysfsNames.flatMap { ["in_\($0)_hysteresis", "in_\($0)_hysteresis_relative"] }
    }
}

/// The registry of sensor drivers.
enum SensorDrivers {
    static let all: [any SensorDriver] = [
        AccelerometerDriver(), GyroscopeDriver(), MagnetometerDriver(), ProximityDriver(), LightDriver(), PressureDriver(),
        CompassDriver(), StepCounterDriver(), ActivityRecognizerDriver(), SignificantMotionDriver(), OnBodyDriver(),
        HumanPresenceDriver(),
    ]

    static func driver(for kind: SensorKind) -> any SensorDriver {
        all.first { $0.kind == kind }!
    }
}
