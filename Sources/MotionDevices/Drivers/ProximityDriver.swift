import CLibIIO
import MotionCore

/// `in_proximity*`: a dimensionless reading, larger when something is nearer; kept raw (scale 1 if absent).
/// Not the proximity channels of an HID human-presence sensor (`HumanPresenceDriver`) or of the
/// ChromeOS EC's on-body detection (`OnBodyDriver`): those devices are read as their own kinds.
struct ProximityDriver: SensorDriver {
    let kind = SensorKind.proximity
    let channelType = IIO_PROXIMITY
    let sysfsName = "proximity"
    let unitToSI = 1.0

    func channels(among channels: [any ChannelInfo], deviceName: String) -> [any ChannelInfo] {
        deviceName == HumanPresenceDriver.deviceName || deviceName == OnBodyDriver.deviceName
            ? [] : channels.filter { $0.type == IIO_PROXIMITY }
    }
}
