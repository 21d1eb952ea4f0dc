import Logging
import MotionCore
import MotionDevices
import Testing

@testable import MotionHub

/// What the log says mends a sensor whose axes disagree, as a value: the hub gives the facts (the
/// device, the mount matrix in Linux userspace's frame); the configuration's wording is the daemon's.
@Suite struct CalibrationLogTests {
    /// A gyroscope's x and y swapped and z inverted: mended by the same mapping (its own inverse), which
    /// the half turn about z between motiond's frame and Linux userspace's (docs/frames.md) leaves as it is.
    static let mending = Matrix3(rowMajor: [0, 1, 0, 1, 0, 0, 0, 0, -1])
    static let gyroscope = DeviceDescriptor(
        number: DeviceNumber(1), name: "bmg160", syspath: "/sys/bus/iio/devices/iio:device1", sensors: [SensorDescriptor(kind: .gyroscope, channels: [])])

    static func log(wording: MountMatrixWording?) -> CalibrationLog {
        CalibrationLog(logger: Logger(label: "test"), mountMatrixWording: wording)
    }

    /// A gyroscope on a chip of its own: its mount matrix, worded by the daemon where it gives a
    /// wording, else the matrix alone.
    @Test func aGyroscopeOfItsOwnIsMendedByAMountMatrixInTheConfigurationsWords() {
        let worded = Self.log(wording: { device, matrix in ("motiond.conf", "\(device) gets \(matrix)") })
            .remedy(Self.mending, for: .gyroscope, devices: [Self.gyroscope])
        #expect(worded == [
            "multiply its readings by": "[0, 1, 0, 1, 0, 0, 0, 0, -1]", "device": "iio:device1", "motiond.conf": "bmg160 gets 0, 1, 0; 1, 0, 0; 0, 0, -1",
        ])
        let plain = Self.log(wording: nil).remedy(Self.mending, for: .gyroscope, devices: [Self.gyroscope])
        #expect(plain["mount matrix"] == "0, 1, 0; 1, 0, 0; 0, 0, -1" && plain["motiond.conf"] == nil, "\(plain)")
    }

    /// One chip carrying the accelerometer too: a mount matrix would turn both, so none is offered;
    /// a mirror image (determinant −1) no mount matrix mends.
    @Test func aSharedChipOrAMirrorImageIsReportedUpstream() {
        let imu = DeviceDescriptor(
            number: DeviceNumber(0), name: "bmi160", syspath: "/sys/bus/iio/devices/iio:device0",
            sensors: [SensorDescriptor(kind: .accelerometer, channels: []), SensorDescriptor(kind: .gyroscope, channels: [])])
        let log = Self.log(wording: { _, _ in ("motiond.conf", "never") })
        let shared = log.remedy(Self.mending, for: .gyroscope, devices: [imu])
        #expect(shared["remedy"] == "the gyroscope shares iio:device0 with the accelerometer: its driver maps them differently; report it upstream")
        let mirror = log.remedy(Matrix3(rowMajor: [-1, 0, 0, 0, 1, 0, 0, 0, 1]), for: .gyroscope, devices: [Self.gyroscope])
        #expect(mirror["remedy"] == "a mirror image (its driver inverts an axis), which no mount matrix mends: report it upstream")
        #expect(shared["motiond.conf"] == nil && mirror["motiond.conf"] == nil)
    }
}
