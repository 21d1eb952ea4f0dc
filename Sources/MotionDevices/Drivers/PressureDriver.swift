import CLibIIO
import MotionCore

/// `in_pressure*`: barometric pressure, kPa (the IIO ABI's unit: `_input`, or `_raw` × `_scale`), for
/// the altimeter: bmp280, bme680, ms5611, the lps22hb family and the like. Their temperature channel,
/// which the standard atmosphere does not need, is not read.
struct PressureDriver: SensorDriver {
    let kind = SensorKind.pressure
    let channelType = IIO_PRESSURE
    let sysfsName = "pressure"
    let unitToSI = 1.0
}
