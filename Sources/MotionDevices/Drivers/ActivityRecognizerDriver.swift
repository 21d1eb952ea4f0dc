import CLibIIO
import MotionCore

/// `in_activity_{still,walking,running}_input`: an accelerometer's own activity classes (bma400), the
/// confidence of each in percent, read from sysfs by `ChipFunctions`. Only channels with a value: the
/// ChromeOS EC's `activity_still` channel has none (it is significant motion's event, not a class).
struct ActivityRecognizerDriver: SensorDriver {
    let kind = SensorKind.activityRecognizer
    let channelType = IIO_ACTIVITY
    let sysfsName = "activity"
    let unitToSI = 1.0

    /// The modifiers of the classes read, in the sample's order: x still, y walking, z running
    /// (jogging counts as running where a chip tells it apart).
    static let classes: [(axis: Axis, modifiers: [iio_modifier])] = [
        (.x, [IIO_MOD_STILL]), (.y, [IIO_MOD_WALKING]), (.z, [IIO_MOD_RUNNING, IIO_MOD_JOGGING]),
    ]

    func component(of channel: any ChannelInfo) -> Axis? {
        Self.classes.first { $0.modifiers.contains(channel.modifier) }?.axis
    }

    func channels(among channels: [any ChannelInfo]) -> [any ChannelInfo] {
        channels.filter { channel in
            channel.type == IIO_ACTIVITY && channel.filename(ofAttribute: "input") != nil
                && Self.classes.contains { $0.modifiers.contains(channel.modifier) }
        }
    }
}
