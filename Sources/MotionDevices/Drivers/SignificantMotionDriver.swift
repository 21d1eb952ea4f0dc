import CLibIIO
import MotionCore
import MotionSystem

/// The ChromeOS EC's significant motion (`cros-ec-activity`): an `IIO_ACTIVITY` channel modified
/// `still` with no value at all, only its one-shot event `events/in_activity_still_change_falling_en`
/// (cros_ec_activity.c `cros_ec_activity_single_shot`, torvalds/linux 34120f7f, lines 40–47). libiio
/// lists no channel for it (it has no value file), so it is found by that event's file.
struct SignificantMotionDriver: SensorDriver {
    let kind = SensorKind.significantMotion
    let channelType = IIO_ACTIVITY
    let sysfsName = "activity"
    let unitToSI = 1.0

    /// The event's enable attribute, which the channel stands for.
    static let enableAttribute = "events/in_activity_still_change_falling_en"

    func channels(among channels: [any ChannelInfo]) -> [any ChannelInfo] { [] }

    func eventOnlyChannel(device: String, sysfs: Sysfs) -> ChannelDescriptor? {
        guard sysfs.exists(device: device, attribute: Self.enableAttribute) else { return nil }
        return ChannelDescriptor(id: "activity_still", axis: nil, valueAttribute: Self.enableAttribute, isProcessed: true)
    }
}
