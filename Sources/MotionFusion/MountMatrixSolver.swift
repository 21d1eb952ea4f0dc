#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import MotionCore

/// An accelerometer's mount matrix from three still poses of the device, in the hwdb's convention
/// (`ACCEL_MOUNT_MATRIX`, systemd's 60-sensor.hwdb): the matrix `M` that turns the chip's raw
/// reading into the display panel's axes (x to the right, y up, z out of the screen) with
/// iio-sensor-proxy's sign, under which the panel upright reads (0, −1 g, 0), its right edge up
/// (−1 g, 0, 0) and its screen up (0, 0, −1 g) (iio-sensor-proxy's test-orientation.c and
/// orientation.c; docs/frames.md). So `M = −[r̂; û; f̂]`, the rows being the unit readings of the
/// right-edge-up, upright and screen-up poses.
///
/// A chip reports specific force (+1 g up, the kernel's ABI), so the three readings of a rigid
/// sensor form a right-handed set, `(r̂ × û) · f̂ = +1`; a left-handed set means a pose was taken the
/// wrong way round (the left edge up instead of the right) and is refused, as is a pose not along an
/// axis of the chip (each must be within `tolerance` of one) and an axis used twice. The matrix
/// written then has the determinant −1, as 154 of the 203 numeric entries of Debian 12's
/// 60-sensor.hwdb do: the hwdb's gravity sign is the opposite of the chip's.
public enum MountMatrixSolver {
    /// The largest angle between a pose's reading and the chip axis it is taken for, rad: 25°, a
    /// device propped up by hand rather than set square.
    public static let tolerance = 25.0 * .pi / 180

    /// Why poses give no matrix.
    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// The pose's reading is not near any axis of the chip: it was held at a slant (`angle` off, degrees).
        case notAlongAnAxis(pose: String, angle: Double)
        /// Two poses read along the same chip axis: one of them was not the pose asked for.
        case axisUsedTwice(String, String)
        /// The poses form a mirror image: one was taken the wrong way round.
        case mirrored
        /// A reading has no direction (all zero).
        case noReading(pose: String)
        /// The check pose (left edge up) reads `angle` degrees from where the matrix puts it.
        case checkFailed(angle: Double)

        public var description: String {
            switch self {
            case .notAlongAnAxis(let pose, let angle):
                "the \(pose) reading is \(Int(angle.rounded()))° away from every axis of the sensor: hold it square"
            case .axisUsedTwice(let a, let b):
                "the \(a) and \(b) readings point along the same axis of the sensor: one of them was not the pose asked for"
            case .mirrored:
                "the three poses are a mirror image of any real turn: was the right edge up (not the left), and the screen up (not down)?"
            case .noReading(let pose):
                "the \(pose) reading is zero"
            case .checkFailed(let angle):
                "the check pose (left edge up) reads \(Int(angle.rounded()))° away from where the matrix puts it: one of the poses was not the one asked for; start again"
            }
        }
    }

    /// The mount matrix from the raw readings (any units) with the panel upright, its right edge up
    /// and its screen up; each reading is rounded to the nearest axis of the chip.
    public static func matrix(upright: Vector3, rightEdgeUp: Vector3, screenUp: Vector3) -> Result<Matrix3, Refusal> {
        var axes: [(pose: String, axis: Vector3)] = []
        for (pose, reading) in [("right-edge-up", rightEdgeUp), ("upright", upright), ("screen-up", screenUp)] {
            guard reading.length > 0 else { return .failure(.noReading(pose: pose)) }
            let (axis, angle) = nearestAxis(reading)
            guard angle <= tolerance else { return .failure(.notAlongAnAxis(pose: pose, angle: angle * 180 / .pi)) }
            if let other = axes.first(where: { abs($0.axis.dot(axis)) > 0.5 }) { return .failure(.axisUsedTwice(other.pose, pose)) }
            axes.append((pose, axis))
        }
        let (r, u, f) = (axes[0].axis, axes[1].axis, axes[2].axis)
        guard r.cross(u).dot(f) > 0 else { return .failure(.mirrored) }
        return .success(Matrix3(row0: r * -1, row1: u * -1, row2: f * -1))
    }

    /// Checks `matrix` on a fourth pose, the left edge up, which the three it came from do not
    /// decide: the matrix must put it opposite the right edge (+1 g along x by iio-sensor-proxy's
    /// convention, right edge up reading −1 g), within the poses' tolerance. Nil: it agrees.
    public static func check(_ matrix: Matrix3, leftEdgeUp: Vector3) -> Refusal? {
        guard leftEdgeUp.length > 0 else { return .noReading(pose: "left-edge-up") }
        let seen = matrix * leftEdgeUp
        let angle = acos(max(-1, min(1, seen.x / seen.length)))
        return angle <= tolerance ? nil : .checkFailed(angle: angle * 180 / .pi)
    }

    /// The signed unit axis of the chip nearest `v`, and the angle between them, rad.
    static func nearestAxis(_ v: Vector3) -> (axis: Vector3, angle: Double) {
        let components = [v.x, v.y, v.z]
        let index = components.indices.max { abs(components[$0]) < abs(components[$1]) }!
        var axis = Vector3.zero
        axis[Axis(rawValue: index)!] = components[index] < 0 ? -1 : 1
        let cosine = min(1, abs(components[index]) / v.length)
        return (axis, acos(cosine))
    }
}
