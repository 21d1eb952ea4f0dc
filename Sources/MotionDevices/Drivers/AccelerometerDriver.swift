import CLibIIO
import MotionCore

/// `in_accel_*`: specific force; the IIO ABI's unit is m/s² already.
struct AccelerometerDriver: SensorDriver {
    let kind = SensorKind.accelerometer
    let channelType = IIO_ACCEL
    let sysfsName = "accel"
    let unitToSI = 1.0
}
