import CLibIIO
import MotionCore

/// `in_illuminance*`: ambient light, lux (the IIO ABI's unit for illuminance: `_input`, or `_raw`
/// × `_scale`); a driver that gives no scale is read in raw counts, "vendor" units.
///
/// An HID sensor hub's light sensor (`hid-sensor-als`) gave only `in_intensity_both_raw` before
/// Linux 5.12 added its illuminance channel: without an illuminance channel, that one is read, in lux
/// as iio-sensor-proxy reads it (HID's ambient-light usage is lux, by Microsoft's HID sensor usages,
/// whatever the IIO ABI says of intensities).
struct LightDriver: SensorDriver {
    let kind = SensorKind.light
    let channelType = IIO_LIGHT
    let sysfsName = "illuminance"
    var sysfsNames: [String] { ["illuminance", "intensity"] }
    let unitToSI = 1.0

    func channels(among channels: [any ChannelInfo]) -> [any ChannelInfo] {
        let illuminance = channels.filter { $0.type == IIO_LIGHT }
        return !illuminance.isEmpty ? illuminance : channels.filter { $0.type == IIO_INTENSITY && $0.modifier == IIO_MOD_LIGHT_BOTH }
    }
}
