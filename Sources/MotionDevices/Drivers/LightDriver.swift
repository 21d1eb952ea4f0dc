import CLibIIO
import MotionCore

/// `in_illuminance*`: ambient light, lux (the IIO ABI's unit for illuminance: `_input`, or `_raw`
/// × `_scale`); a driver that gives no scale is read in raw counts, "vendor" units.
struct LightDriver: SensorDriver {
    let kind = SensorKind.light
    let channelType = IIO_LIGHT
    let sysfsName = "illuminance"
    let unitToSI = 1.0
}
