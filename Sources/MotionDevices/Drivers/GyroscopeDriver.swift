import CLibIIO
import MotionCore

/// `in_anglvel_*`: angular velocity; the IIO ABI's unit is rad/s already.
struct GyroscopeDriver: SensorDriver {
    let kind = SensorKind.gyroscope
    let channelType = IIO_ANGL_VEL
    let sysfsName = "anglvel"
    let unitToSI = 1.0
}
