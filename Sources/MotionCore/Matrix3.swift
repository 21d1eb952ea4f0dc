/// A 3×3 matrix stored by rows, used for mount matrices and rotation matrices (dimensionless).
public struct Matrix3: Sendable, Hashable, Codable {
    /// First row (the coefficients that make the output's x component).
    public var row0: Vector3
    /// Second row (the output's y component).
    public var row1: Vector3
    /// Third row (the output's z component).
    public var row2: Vector3

    /// Creates a matrix from its rows.
    @inlinable
    public init(row0: Vector3, row1: Vector3, row2: Vector3) {
        self.row0 = row0
        self.row1 = row1
        self.row2 = row2
    }

    /// Creates a matrix from nine numbers in row order: `x1, y1, z1, x2, y2, z2, x3, y3, z3`,
    /// the order of IIO's `mount_matrix` attribute.
    public init(rowMajor m: [Double]) {
        precondition(m.count == 9, "a 3×3 matrix has nine elements")
        self.init(
            row0: Vector3(x: m[0], y: m[1], z: m[2]),
            row1: Vector3(x: m[3], y: m[4], z: m[5]),
            row2: Vector3(x: m[6], y: m[7], z: m[8]))
    }

    /// The identity matrix.
    public static let identity = Matrix3(
        row0: Vector3(x: 1, y: 0, z: 0),
        row1: Vector3(x: 0, y: 1, z: 0),
        row2: Vector3(x: 0, y: 0, z: 1))

    /// The nine elements in row order.
    public var rowMajor: [Double] {
        [row0.x, row0.y, row0.z, row1.x, row1.y, row1.z, row2.x, row2.y, row2.z]
    }

    /// `self × v`: each output component is the dot product of a row with `v`.
    @inlinable @inline(__always)
    public static func * (m: Matrix3, v: Vector3) -> Vector3 {
        Vector3(
            x: m.row0.x * v.x + m.row0.y * v.y + m.row0.z * v.z,
            y: m.row1.x * v.x + m.row1.y * v.y + m.row1.z * v.z,
            z: m.row2.x * v.x + m.row2.y * v.y + m.row2.z * v.z)
    }

    /// The product `a × b` (apply `b`, then `a`).
    @inlinable @inline(__always)
    public static func * (a: Matrix3, b: Matrix3) -> Matrix3 {
        // Each row of the product is a row of `a` combining the rows of `b`.
        func row(_ r: Vector3) -> Vector3 { b.row0 * r.x + b.row1 * r.y + b.row2 * r.z }
        return Matrix3(row0: row(a.row0), row1: row(a.row1), row2: row(a.row2))
    }

    /// The transpose (the inverse of a rotation).
    @inlinable
    public var transposed: Matrix3 {
        Matrix3(
            row0: Vector3(x: row0.x, y: row1.x, z: row2.x),
            row1: Vector3(x: row0.y, y: row1.y, z: row2.y),
            row2: Vector3(x: row0.z, y: row1.z, z: row2.z))
    }

    /// The determinant: +1 for a rotation, −1 for a rotation with a mirror.
    @inlinable
    public var determinant: Double { row0.dot(row1.cross(row2)) }
}
