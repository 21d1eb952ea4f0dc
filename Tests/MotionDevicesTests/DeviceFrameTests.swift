import Foundation
import MotionCore
import MotionFusion
import Testing

@testable import MotionDevices

/// The rule that takes a sensor's readings into motiond's device frame (docs/frames.md).
@Suite struct DeviceFrameTests {
    /// Specific force in m/s² for raw counts at iio-sensor-proxy's test scale (0.00980665 m/s² per count).
    static func reading(_ raw: Vector3, matrix: Matrix3 = .identity) throws -> Vector3 {
        try DeviceFrame.transform(mountMatrix: matrix).matrix * (raw * 0.00980665)
    }

    /// iio-sensor-proxy 3.0 and 3.9 on their own fake polled accelerometer (identity matrix): x = −1000
    /// is `right-up`, x = +1000 `left-up`, y = +1000 `bottom-up`, y = −1000 `normal` (measured with
    /// Debian's monitor-sensor; `IIOSensorProxyAgreementTests` repeats it on every fixture). In motiond's
    /// frame, the specific force points to the edge that is up.
    @Test func linuxUserspaceReadingsAreAHalfTurnAboutZFromTheDeviceFrame() throws {
        // right-up: the right edge (+x) is up.
        #expect(try Self.reading(Vector3(x: -1000, y: 0, z: 0)) == Vector3(x: 9.80665, y: 0, z: 0))
        // left-up: the left edge (−x) is up.
        #expect(try Self.reading(Vector3(x: 1000, y: 0, z: 0)) == Vector3(x: -9.80665, y: 0, z: 0))
        // normal: the top edge (+y) is up.
        #expect(try Self.reading(Vector3(x: 0, y: -1000, z: 0)) == Vector3(x: 0, y: 9.80665, z: 0))
        // bottom-up.
        #expect(try Self.reading(Vector3(x: 0, y: 1000, z: 0)) == Vector3(x: 0, y: -9.80665, z: 0))
        // Face up: the screen (+z) is up; z is not turned.
        let faceUp = try Self.reading(Vector3(x: 0, y: -300, z: 950))
        #expect(faceUp.z > 9 && faceUp.y > 2.9)
    }

    /// systemd's hwdb: `1, 0, 0; 0, -1, 0; 0, 0, 1` (34 entries in Debian 12's 60-sensor.hwdb) flips y
    /// and leaves z: a mirror, which no chip is. Its x and y rows are what users checked against the
    /// screen; the z that makes it a rotation is x × y = (0, 0, −1): the chip faces the back.
    @Test func aMirrorMatrixKeepsItsXAndYRowsAndGetsTheZRowOfARotation() throws {
        let hwdb = Matrix3(rowMajor: [1, 0, 0, 0, -1, 0, 0, 0, 1])
        let transform = try DeviceFrame.transform(mountMatrix: hwdb)
        #expect(transform.rotation == Matrix3(rowMajor: [1, 0, 0, 0, -1, 0, 0, 0, -1]))
        #expect(transform.rotation.determinant == 1)
        #expect(transform.correction?.contains("determinant is -1") == true)
        // x and y as the hwdb says (then the half turn), z from the rotation.
        #expect(transform.matrix * Vector3(x: 1, y: 2, z: 3) == Vector3(x: -1, y: 2, z: -3))
    }

    /// Two hwdb entries in Debian 12 repeat a row in z (`1, 0, 0; 0, -1, 0; 1, 0, 0`): singular.
    @Test func aSingularMatrixWithGoodXAndYRowsIsCompleted() throws {
        let transform = try DeviceFrame.transform(mountMatrix: Matrix3(rowMajor: [1, 0, 0, 0, -1, 0, 1, 0, 0]))
        #expect(transform.rotation.row2 == Vector3(x: 0, y: 0, z: -1))
        #expect(transform.correction?.contains("singular") == true)
    }

    @Test func aRotationIsUsedAsItIs() throws {
        let phone = Matrix3(rowMajor: [0, 1, 0, -1, 0, 0, 0, 0, 1])
        let transform = try DeviceFrame.transform(mountMatrix: phone)
        #expect(transform.rotation == phone)
        #expect(transform.correction == nil)
    }

    /// The motiond.conf matrix an axis check proposes, read back as motiond reads that file, turns the
    /// sensor's readings into the mended ones: its transform is the mending matrix after the old one.
    /// A mirror image has none (every matrix is read as a rotation).
    @Test(arguments: [[0, 1, 0, 1, 0, 0, 0, 0, -1], [0, 0, 1, 1, 0, 0, 0, 1, 0], [-1, 0, 0, 0, 1, 0, 0, 0, -1]])
    func theMountMatrixSettingThatMendsASensorTurnsItsReadingsSo(mending values: [Double]) throws {
        let mending = Matrix3(rowMajor: values)
        let phone = try DeviceFrame.transform(mountMatrix: Matrix3(rowMajor: [0, 1, 0, -1, 0, 0, 0, 0, 1]))
        let setting = try #require(DeviceFrame.mountMatrixSetting(mending: mending, frameMatrix: phone.matrix))
        #expect(DeviceFrame.mountMatrixSetting(mending: Matrix3(rowMajor: values.map { -$0 }), frameMatrix: phone.matrix) == nil, "a mirror image")
        let read = try #require(MountMatrixOverride(match: .name("bmi260"), matrix: setting))
        #expect(try DeviceFrame.transform(mountMatrix: read.matrix).matrix == mending * phone.matrix, "\(setting)")
    }

    @Test(arguments: [[1, 0, 0, 2, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 0, 0, 0], [2, 0, 0, 0, 2, 0, 0, 0, 2], [1, 1, 0, -1, 1, 0, 0, 0, 1]])
    func aMatrixWhoseXAndYRowsAreNoRotationIsRefused(values: [Double]) {
        #expect(throws: DeviceFrame.Problem.notARotation) { try DeviceFrame.transform(mountMatrix: Matrix3(rowMajor: values)) }
    }

    /// Every distinct ACCEL_MOUNT_MATRIX of Debian 12's /lib/udev/hwdb.d/60-sensor.hwdb (systemd 252):
    /// each becomes a rotation whose x and y rows are the hwdb's.
    @Test func everyMatrixOfDebian12sHwdbBecomesARotationKeepingItsXAndYRows() throws {
        let hwdb = [
            "0, -1, 0; -1, 0, 0; 0, 0, 1", "1, 0, 0; 0, -1, 0; 0, 0, 1", "0, 1, 0; 1, 0, 0; 0, 0, 1",
            "-1, 0, 0; 0, 1, 0; 0, 0, 1", "0, 1, 0; -1, 0, 0; 0, 0, 1", "-1, 0, 0; 0, 1, 0; 0, 0, -1",
            "0, -1, 0; 1, 0, 0; 0, 0, 1", "-1, 0, 0; 0, -1, 0; 0, 0, 1", "-1, 0, 0; 0, -1, 0; 0, 0, -1",
            "-0, -1, 0; 0, 0, -1; 1, 0, 0", "0, -1, 0; -1, 0, 0; 0, 0, -1", "0, 1, 0; -1, 0, 0; 0, 0, -1",
            "1, 0, 0; 0, 1, 0; 0, 0, 1", "1, 0, 0; 0, -1, 0; 0, 0, -1", "0, -1, 0; 1, 0, 0; 0, 0, -1",
            "1, 0, 0; 0, 1, 0; 0, 0, -1", "1, 0, 0; 0, -1, 0; 1, 0, 0", "0,1,0;-1,0,0;-1,0,0",
            "0, 1, 0; 1, 0, 0; 0, 0, -1", "0, 1, 0; 0, 0, -1; -1, 0, 0", "0, 0, -1; 1, 0, 0; 0, -1, 0",
            "-1, 0, 0; 0, 0, -1; 0, -1, 0", "-0, -1, 0; 0, 0, 1; -1, 0, 0",
        ]
        for text in hwdb {
            let matrix = try #require(AttributeParser.mountMatrix(text))
            let transform = try DeviceFrame.transform(mountMatrix: matrix)
            #expect(abs(transform.rotation.determinant - 1) < 1e-12, "\(text)")
            #expect(transform.rotation.row0 == matrix.row0 && transform.rotation.row1 == matrix.row1, "\(text)")
        }
    }

    /// A chip that faces the back of a tablet, with the hwdb's mirror matrix: a device turning about
    /// all three axes is fused to its true attitude through the completed matrix, and not through the
    /// hwdb's matrix as written (there the gyroscope turns one way and gravity the other).
    @Test func theFusionConvergesOnARotatingDeviceWithAMirrorMatrix() throws {
        let hwdb = Matrix3(rowMajor: [1, 0, 0, 0, -1, 0, 0, 0, 1])
        // The physical mounting: device frame = half turn × (hwdb with its z negated) × chip.
        let chipToDevice = DeviceFrame.fromLinuxUserspace * Matrix3(rowMajor: [1, 0, 0, 0, -1, 0, 0, 0, -1])
        let deviceToChip = chipToDevice.transposed
        let completed = try DeviceFrame.transform(mountMatrix: hwdb).matrix
        let asWritten = DeviceFrame.fromLinuxUserspace * hwdb

        func inclinationError(through applied: Matrix3) -> Double {
            var fusion = SensorFusion(gyroscopeRate: 100)
            var attitude = Quaternion(angle: 0.3, axis: Vector3(x: 1, y: 0, z: 0))
            let rate = Vector3(x: 0.4, y: -0.3, z: 0.5)  // rad/s, device frame
            let step = Quaternion(angle: rate.length * 0.01, axis: rate * (1 / rate.length))
            var worst = 0.0
            for i in 1...3000 {
                attitude = (attitude * step).normalized
                let force = attitude.conjugate.rotate(Vector3(x: 0, y: 0, z: Units.standardGravity))
                let t = Int64(i) * 10_000_000
                fusion.update(SensorSample(kind: .gyroscope, device: DeviceNumber(0), timestamp: t, vector: applied * (deviceToChip * rate)))
                fusion.update(SensorSample(kind: .accelerometer, device: DeviceNumber(0), timestamp: t, vector: applied * (deviceToChip * force)))
                guard i > 1000 else { continue }
                // Up seen from the device, estimated and true.
                let estimated = fusion.attitude(in: .xArbitraryZVertical).quaternion.conjugate.rotate(Vector3(x: 0, y: 0, z: 1))
                let truth = attitude.conjugate.rotate(Vector3(x: 0, y: 0, z: 1))
                worst = max(worst, acos(min(1, estimated.dot(truth))) * 180 / .pi)
            }
            return worst
        }
        #expect(inclinationError(through: completed) < 1)
        #expect(inclinationError(through: asWritten) > 20)
    }
}
