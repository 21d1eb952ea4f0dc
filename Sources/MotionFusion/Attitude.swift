#if canImport(Glibc)
import Glibc
#endif
import MotionCore

/// The rotation of the device relative to a reference frame, in CoreMotion's conventions.
///
/// `quaternion` turns device coordinates into reference coordinates (v_ref = q v_dev q*).
/// `rotationMatrix` is CoreMotion's `CMRotationMatrix`: it turns reference coordinates into device
/// coordinates (its third column is "up" seen from the device, −gravity). The Euler angles are
/// CoreMotion's: the attitude is yaw about z, then pitch about the new x, then roll about the new y.
public struct Attitude: Sendable, Hashable, Codable {
    /// Device → reference frame, unit quaternion.
    public var quaternion: Quaternion

    /// Creates an attitude from a device → reference quaternion.
    public init(quaternion: Quaternion) { self.quaternion = quaternion }

    /// CoreMotion's rotation matrix: reference coordinates → device coordinates (dimensionless).
    public var rotationMatrix: Matrix3 { quaternion.rotationMatrix.transposed }

    /// Rotation about the device's x axis, radians in [−π/2, π/2]: positive when the top edge rises.
    public var pitch: Double {
        let q = quaternion
        return asin(max(-1, min(1, 2 * (q.y * q.z + q.w * q.x))))
    }

    /// Rotation about the device's y axis, radians in (−π, π]: positive when the right edge goes down.
    public var roll: Double {
        let q = quaternion
        return atan2(-2 * (q.x * q.z - q.w * q.y), 1 - 2 * (q.x * q.x + q.y * q.y))
    }

    /// Rotation about the vertical, radians in (−π, π]: positive counter-clockwise seen from above.
    public var yaw: Double {
        let q = quaternion
        return atan2(-2 * (q.x * q.y - q.w * q.z), 1 - 2 * (q.x * q.x + q.z * q.z))
    }

    /// The attitude relative to `reference` (CoreMotion's `multiply(byInverseOf:)`): identity when the
    /// device is where it was at `reference`; the quaternion turns current device coordinates into
    /// the reference attitude's device coordinates.
    public mutating func multiply(byInverseOf reference: Attitude) {
        quaternion = (reference.quaternion.conjugate * quaternion).normalized
    }

    /// `multiply(byInverseOf:)` as a new value.
    public func multiplied(byInverseOf reference: Attitude) -> Attitude {
        var copy = self
        copy.multiply(byInverseOf: reference)
        return copy
    }

    /// The rotation by `angle` radians about the vertical.
    static func yawRotation(_ angle: Double) -> Quaternion {
        Quaternion(w: cos(angle / 2), x: 0, y: 0, z: sin(angle / 2))
    }
}
