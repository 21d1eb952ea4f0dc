import MotionCore

/// Turns a mount matrix into the matrix motiond applies to a sensor's readings: from the chip's
/// axes (SI units) to motiond's device frame (x right, y up, z out of the screen, right-handed, the
/// frame of Android and CoreMotion). docs/frames.md states the rule with worked examples.
///
/// 1. The mount matrix (udev `ACCEL_MOUNT_MATRIX`, else sysfs, else identity) gives Linux
///    userspace's frame: the frame systemd's hwdb and the phones' device trees are tuned in, until
///    iio-sensor-proxy reads the screen orientation right. iio-sensor-proxy then negates x and y
///    ("to match the Pegatron accelerometer code", in each of its accelerometer drivers), so in its
///    reading y = −1 g after the matrix is `normal`, x = +1 g `left-up`, z = +1 g face up. The
///    specific force of a device upright is +1 g along its top edge, so that frame is motiond's turned
///    by 180° about z: motiond applies `diag(−1, −1, 1)` after the matrix.
/// 2. Every accelerometer, gyroscope and magnetometer chip measures in a right-handed frame, so a
///    matrix that maps it to a right-handed frame is a rotation (determinant +1). The hwdb's header
///    asks only that "the x and y axis matches the x and y axis of the display": those two rows are
///    what users checked against the screen's rotation, and its z row was often left as `0, 0, 1`.
///    Where the matrix is not a rotation (determinant −1, or a z row that repeats another), its z row
///    is taken as `row x × row y`, the one z that makes it a rotation. The accelerometer, gyroscope and
///    magnetometer then agree (the fusion converges) and face-up is face-up.
public enum DeviceFrame {
    /// Linux userspace's frame (after the mount matrix) → motiond's device frame: a half turn about z.
    public static let fromLinuxUserspace = Matrix3(
        row0: Vector3(x: -1, y: 0, z: 0),
        row1: Vector3(x: 0, y: -1, z: 0),
        row2: Vector3(x: 0, y: 0, z: 1))

    /// Why a mount matrix cannot be used.
    public enum Problem: Error, Hashable, CustomStringConvertible {
        /// Its x and y rows are not two perpendicular unit vectors (within 2 %), so no rotation has them.
        case notARotation

        public var description: String {
            switch self {
            case .notARotation: "its x and y rows are not perpendicular unit vectors, so it is no rotation"
            }
        }
    }

    /// What is applied to a sensor's readings, and what was changed in the mount matrix to get it.
    public struct Transform: Sendable, Hashable {
        /// The transform of a device with no mount matrix (identity in Linux userspace's frame).
        public static let identity = Transform(matrix: fromLinuxUserspace, rotation: .identity, correction: nil)

        /// Chip axes (SI) → motiond's device frame: `fromLinuxUserspace × rotation`.
        public var matrix: Matrix3
        /// The mount matrix as a rotation: the given one, or the given one with its z row completed.
        public var rotation: Matrix3
        /// Set when the z row was replaced: what it was, what it became, and why.
        public var correction: String?
    }

    /// The mount matrix for motiond.conf's `mount_matrices` (Linux userspace's frame, written
    /// `"x1, y1, z1; x2, y2, z2; x3, y3, z3"`) that makes a sensor read as its readings multiplied by
    /// `mending` (motiond's frame) do, for a sensor its current matrix turns into motiond's frame as
    /// `frameMatrix` (DEVICES' `frame_matrix`). Nil where `mending` is a mirror image (determinant
    /// −1: a driver that inverts one axis): every mount matrix is read as a rotation (step 2 above),
    /// so none can mend that.
    public static func mountMatrixSetting(mending: Matrix3, frameMatrix: Matrix3) -> String? {
        guard mending.determinant > 0 else { return nil }
        let m = fromLinuxUserspace * mending * frameMatrix
        return [m.row0, m.row1, m.row2].map { r in [r.x, r.y, r.z].map { String(Int($0.rounded())) }.joined(separator: ", ") }
            .joined(separator: "; ")
    }

    /// The transform for a mount matrix (rows as in IIO's `mount_matrix`).
    public static func transform(mountMatrix m: Matrix3) throws(Problem) -> Transform {
        let tolerance = 0.02
        let x = m.row0, y = m.row1
        guard abs(x.length - 1) < tolerance, abs(y.length - 1) < tolerance, abs(x.dot(y)) < tolerance else {
            throw .notARotation
        }
        let z = x.cross(y)
        var rotation = m
        var correction: String? = nil
        if (m.row2 - z).length > tolerance {
            rotation.row2 = z
            let why = abs(m.determinant) < tolerance ? "the matrix is singular" : "the determinant is \(format(m.determinant))"
            correction = "z row \(format(m.row2)) replaced by x × y = \(format(z)): \(why), and a sensor's axes are right-handed"
        }
        return Transform(matrix: fromLinuxUserspace * rotation, rotation: rotation, correction: correction)
    }

    private static func format(_ v: Vector3) -> String { "(\(format(v.x)), \(format(v.y)), \(format(v.z)))" }

    private static func format(_ value: Double) -> String {
        let rounded = (value * 1000).rounded() / 1000
        return rounded == rounded.rounded() ? "\(Int(rounded))" : "\(rounded)"
    }
}
