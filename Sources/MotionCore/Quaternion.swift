/// A rotation as a unit quaternion (dimensionless), `w + xi + yj + zk`.
///
/// `rotate(v)` computes `q v q*`: for an attitude that maps device coordinates to reference-frame
/// coordinates, it expresses a device-frame vector in the reference frame.
public struct Quaternion: Sendable, Hashable, Codable {
    /// Scalar part.
    public var w: Double
    /// Vector part, i.
    public var x: Double
    /// Vector part, j.
    public var y: Double
    /// Vector part, k.
    public var z: Double

    /// Creates a quaternion from its four components, scalar first.
    @inlinable
    public init(w: Double, x: Double, y: Double, z: Double) {
        self.w = w
        self.x = x
        self.y = y
        self.z = z
    }

    /// The identity rotation.
    public static let identity = Quaternion(w: 1, x: 0, y: 0, z: 0)

    /// The rotation by `angle` radians about the unit vector `axis` (right-handed).
    @inlinable
    public init(angle: Double, axis: Vector3) {
        let s = (angle / 2).sin
        self.init(w: (angle / 2).cos, x: s * axis.x, y: s * axis.y, z: s * axis.z)
    }

    /// The Hamilton product `lhs ⊗ rhs`: first rotate by `rhs`, then by `lhs`.
    @inlinable @inline(__always)
    public static func * (a: Quaternion, b: Quaternion) -> Quaternion {
        Quaternion(
            w: a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
            x: a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
            y: a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
            z: a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w)
    }

    /// The inverse rotation (the conjugate of a unit quaternion).
    @inlinable
    public var conjugate: Quaternion { Quaternion(w: w, x: -x, y: -y, z: -z) }

    /// The quaternion scaled to unit norm.
    @inlinable
    public var normalized: Quaternion {
        let n = (w * w + x * x + y * y + z * z).squareRoot()
        guard n > 0 else { return .identity }
        let k = 1 / n
        return Quaternion(w: w * k, x: x * k, y: y * k, z: z * k)
    }

    /// The quaternion brought back to unit norm by one Newton step, for a quaternion already within
    /// rounding error of it (a product of unit quaternions): no square root, no division.
    @inlinable
    public var renormalized: Quaternion {
        let k = (3 - (w * w + x * x + y * y + z * z)) * 0.5
        return Quaternion(w: w * k, x: x * k, y: y * k, z: z * k)
    }

    /// `q v q*`: the vector `v` rotated by this quaternion.
    @inlinable @inline(__always)
    public func rotate(_ v: Vector3) -> Vector3 {
        // v + 2w(u × v) + 2u × (u × v), with u the vector part.
        let tx = 2 * (y * v.z - z * v.y)
        let ty = 2 * (z * v.x - x * v.z)
        let tz = 2 * (x * v.y - y * v.x)
        return Vector3(
            x: v.x + w * tx + (y * tz - z * ty),
            y: v.y + w * ty + (z * tx - x * tz),
            z: v.z + w * tz + (x * ty - y * tx))
    }

    /// The rotation matrix `R` with `R v = rotate(v)`.
    @inlinable @inline(__always)
    public var rotationMatrix: Matrix3 {
        Matrix3(
            row0: Vector3(x: 1 - 2 * (y * y + z * z), y: 2 * (x * y - w * z), z: 2 * (x * z + w * y)),
            row1: Vector3(x: 2 * (x * y + w * z), y: 1 - 2 * (x * x + z * z), z: 2 * (y * z - w * x)),
            row2: Vector3(x: 2 * (x * z - w * y), y: 2 * (y * z + w * x), z: 1 - 2 * (x * x + y * y)))
    }

    /// The smallest angle, radians in [0, π], between this rotation and `other`.
    public func angle(to other: Quaternion) -> Double {
        let d = abs(w * other.w + x * other.x + y * other.y + z * other.z)
        return 2 * min(1, d).acos
    }
}

// Spelled as methods so that hot paths read left to right; all are the C library's functions.
#if canImport(Glibc)
import Glibc
#endif

extension Double {
    @usableFromInline var sin: Double { Glibc.sin(self) }
    @usableFromInline var cos: Double { Glibc.cos(self) }
    @usableFromInline var acos: Double { Glibc.acos(self) }
}
