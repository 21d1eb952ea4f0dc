import CLibIIO
import MotionCore

/// `in_proximity*`: a dimensionless reading, larger when something is nearer; kept raw (scale 1 if absent).
struct ProximityDriver: SensorDriver {
    let kind = SensorKind.proximity
    let channelType = IIO_PROXIMITY
    let sysfsName = "proximity"
    let unitToSI = 1.0
}
