import Logging
import MotionCore
import MotionDevices
import MotionFusion

/// How the daemon's configuration gives the device named `device` the mount matrix `matrix`
/// ("x1, y1, z1; x2, y2, z2; x3, y3, z3", in Linux userspace's frame as systemd's hwdb writes it):
/// the file it goes in (e.g. "motiond.conf") and the setting, as one line. The daemon hands it to the
/// hub: the hub core knows no configuration syntax.
package typealias MountMatrixWording = @Sendable (_ device: String, _ matrix: String) -> (file: String, setting: String)

/// What the hub's log says of the sensors' calibration: the gyroscope's, as it is learnt and lost,
/// and the axis checks' verdicts, with what mends a sensor whose axes disagree. Confined to the hub's
/// event loop.
final class CalibrationLog {
    private let logger: Logger
    /// The configuration's wording of a mount matrix; nil: the matrix alone is logged.
    private let mountMatrixWording: MountMatrixWording?
    /// Whether the gyroscope's first calibration was said.
    private var announced = false

    init(logger: Logger, mountMatrixWording: MountMatrixWording?) {
        self.logger = logger
        self.mountMatrixWording = mountMatrixWording
    }

    /// The gyroscope became calibrated (`calibrated`) or stopped being so, its bias uncertain by
    /// `sigma` rad/s. The uncertainty grows in motion (the vertical bias is not observable then) and
    /// falls at each rest, so the state flips with ordinary use: the first calibration is a notice,
    /// the flips after it are for debugging.
    func gyroscopeCalibrationChanged(_ calibrated: Bool, uncertainty sigma: Double) {
        let metadata: Logger.Metadata = ["bias uncertainty": "±\((sigma * 180 / .pi * 1000).rounded() / 1000) °/s"]
        if calibrated && !announced {
            announced = true
            logger.notice("gyroscope calibrated", metadata: metadata)
        } else if calibrated {
            logger.debug("gyroscope calibrated again", metadata: metadata)
        } else if !announced {
            logger.info("gyroscope calibration learning: hold the device still for a few seconds", metadata: metadata)
        } else {
            logger.debug("gyroscope bias uncertain again after motion", metadata: metadata)
        }
    }

    /// The axis check of `sensor` (the gyroscope, against the accelerometer; the magnetometer, against
    /// the gyroscope) gave `verdict`; `devices` are the machine's, for the remedy.
    func axesChecked(_ sensor: SensorKind, _ verdict: AxesVerdict, devices: [DeviceDescriptor]) {
        let (reference, turning) = sensor == .gyroscope ? ("accelerometer", "attitude") : ("gyroscope", "heading")
        guard case .disagree(let mending) = verdict else { return logger.info("the \(sensor)'s axes agree with the \(reference)'s") }
        let metadata = remedy(mending, for: sensor, devices: devices)
        logger.warning("the \(sensor)'s axes disagree with the \(reference)'s: the \(turning) turns the wrong way", metadata: metadata)
    }

    /// What mends a gyroscope or magnetometer whose readings `mending` puts right (in motiond's
    /// frame): a mount matrix in Linux userspace's frame, as the configuration takes it (docs/frames.md:
    /// motiond's frame is that one turned half a turn about z), worded by `mountMatrixWording`.
    func remedy(_ mending: Matrix3, for kind: SensorKind, devices: [DeviceDescriptor]) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["multiply its readings by": "\(mending.rowMajor.map { Int($0) })"]
        guard let device = devices.first(where: { $0.sensor(kind) != nil }), let sensor = device.sensor(kind) else { return metadata }
        metadata["device"] = "\(device.number)"
        if let other = [SensorKind.accelerometer, .gyroscope].first(where: { $0 != kind && device.sensor($0) != nil }) {
            // One chip, one matrix: a mount matrix there would turn the other sensor too.
            metadata["remedy"] = "the \(kind) shares \(device.number) with the \(other): its driver maps them differently; report it upstream"
        } else if let matrix = DeviceFrame.mountMatrixSetting(mending: mending, frameMatrix: sensor.deviceFrameMatrix) {
            if let (file, setting) = mountMatrixWording?(device.name, matrix) {
                metadata["\(file)"] = "\(setting)"
            } else {
                metadata["mount matrix"] = "\(matrix)"
            }
        } else {
            metadata["remedy"] = "a mirror image (its driver inverts an axis), which no mount matrix mends: report it upstream"
        }
        return metadata
    }
}
