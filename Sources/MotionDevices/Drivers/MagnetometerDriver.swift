import CLibIIO
import MotionCore

/// `in_magn_*`: magnetic field; the IIO ABI's unit is the gauss, motiond's the µT (1 G = 100 µT).
struct MagnetometerDriver: SensorDriver {
    let kind = SensorKind.magnetometer
    let channelType = IIO_MAGN
    let sysfsName = "magn"
    let unitToSI = Units.microteslaPerGauss
}
