import CLibIIO
import MotionCore

/// An HID human-presence sensor (`hid-sensor-prox`, IIO name `prox`): whether a person is there
/// (`in_proximity_raw` up to Linux 6.12, `in_proximity0_raw` since 6.13), their distance
/// (`in_proximity1_raw`, metres after offset and scale by the IIO ABI) and their attention
/// (`in_attention_input`, percent: the driver multiplies HID's 0/1 by 100, in sysfs and in the buffer
/// alike). A channel is there only when the hub's report has its usage (`prox_parse_report`).
///
/// `IIO_ATTENTION` (39, Linux 6.13) is past libiio 0.24's `enum iio_chan_type`: libiio gives the
/// channel `IIO_CHAN_TYPE_UNKNOWN`, so it is matched by its id, `attention`.
struct HumanPresenceDriver: SensorDriver {
    let kind = SensorKind.humanPresence
    let channelType = IIO_PROXIMITY
    let sysfsName = "proximity"
    var sysfsNames: [String] { ["proximity", "proximity0", "attention"] }
    let unitToSI = 1.0

    /// The IIO name of `hid-sensor-prox` (drivers/iio/light/hid-sensor-prox.c:241, 282, Linux 6.12).
    static let deviceName = "prox"
    /// The attention channel's id.
    static let attention = "attention"

    /// Which component of the sample a channel gives: x presence, y distance, z attention; nil for
    /// none of them.
    static func axis(of channelID: String) -> Axis? {
        switch channelID {
        case "proximity", "proximity0": .x
        case "proximity1": .y
        case attention: .z
        default: nil
        }
    }

    func component(of channel: any ChannelInfo) -> Axis? { Self.axis(of: channel.id) }

    func channels(among channels: [any ChannelInfo]) -> [any ChannelInfo] { [] }

    func channels(among channels: [any ChannelInfo], deviceName: String) -> [any ChannelInfo] {
        guard deviceName == Self.deviceName else { return [] }
        return channels.filter { ($0.type == IIO_PROXIMITY || $0.id == Self.attention) && Self.axis(of: $0.id) != nil }
    }
}
