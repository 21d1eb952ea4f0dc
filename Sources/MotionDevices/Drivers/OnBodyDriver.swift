import CLibIIO
import MotionCore

/// The ChromeOS EC's on-body detection (`cros-ec-activity`): `in_proximity_raw`, 0 while the body is
/// near and 1 while it is far (the EC's state inverted), and its change event
/// `events/in_proximity_change_either_en` (cros_ec_activity.c `cros_ec_body_detect_events`,
/// torvalds/linux 34120f7f, lines 49–55). Read from sysfs by `ChipFunctions` as 1 on body, 0 off.
struct OnBodyDriver: SensorDriver {
    let kind = SensorKind.onBody
    let channelType = IIO_PROXIMITY
    let sysfsName = "proximity"
    let unitToSI = 1.0

    /// The IIO name of the EC's activity device (`DRV_NAME`, cros_ec_activity.c line 27).
    static let deviceName = "cros-ec-activity"

    func channels(among channels: [any ChannelInfo]) -> [any ChannelInfo] { [] }

    func channels(among channels: [any ChannelInfo], deviceName: String) -> [any ChannelInfo] {
        deviceName == Self.deviceName ? channels.filter { $0.type == IIO_PROXIMITY } : []
    }
}
