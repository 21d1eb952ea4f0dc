import MotionCore

// The 3×3 algebra the bias estimator's Kalman update needs.
extension Matrix3 {
    static let zero = Matrix3(row0: .zero, row1: .zero, row2: .zero)

    static func diagonal(_ x: Double, _ y: Double, _ z: Double) -> Matrix3 {
        Matrix3(row0: Vector3(x: x, y: 0, z: 0), row1: Vector3(x: 0, y: y, z: 0), row2: Vector3(x: 0, y: 0, z: z))
    }

    var transposed: Matrix3 {
        Matrix3(
            row0: Vector3(x: row0.x, y: row1.x, z: row2.x),
            row1: Vector3(x: row0.y, y: row1.y, z: row2.y),
            row2: Vector3(x: row0.z, y: row1.z, z: row2.z))
    }

    static func + (a: Matrix3, b: Matrix3) -> Matrix3 {
        Matrix3(row0: a.row0 + b.row0, row1: a.row1 + b.row1, row2: a.row2 + b.row2)
    }

    static func - (a: Matrix3, b: Matrix3) -> Matrix3 {
        Matrix3(row0: a.row0 - b.row0, row1: a.row1 - b.row1, row2: a.row2 - b.row2)
    }

    static func * (a: Matrix3, k: Double) -> Matrix3 {
        Matrix3(row0: a.row0 * k, row1: a.row1 * k, row2: a.row2 * k)
    }

    @inline(__always)
    static func * (a: Matrix3, b: Matrix3) -> Matrix3 {
        // Each row of the product is a row of `a` combining the rows of `b`.
        func row(_ r: Vector3) -> Vector3 { b.row0 * r.x + b.row1 * r.y + b.row2 * r.z }
        return Matrix3(row0: row(a.row0), row1: row(a.row1), row2: row(a.row2))
    }

    /// `self × bᵀ` where the result is known to be symmetric: six dot products instead of nine.
    @inline(__always)
    func symmetricProduct(_ b: Matrix3) -> Matrix3 {
        let xx = row0.dot(b.row0), xy = row0.dot(b.row1), xz = row0.dot(b.row2)
        let yy = row1.dot(b.row1), yz = row1.dot(b.row2), zz = row2.dot(b.row2)
        return Matrix3(row0: Vector3(x: xx, y: xy, z: xz), row1: Vector3(x: xy, y: yy, z: yz), row2: Vector3(x: xz, y: yz, z: zz))
    }

    /// The inverse of a symmetric positive-definite matrix, by the adjugate.
    @inline(__always)
    var symmetricInverse: Matrix3 {
        let a = row0.x, b = row0.y, c = row0.z, d = row1.y, e = row1.z, f = row2.z
        let c00 = d * f - e * e, c01 = c * e - b * f, c02 = b * e - c * d
        let k = 1 / (a * c00 + b * c01 + c * c02)
        let i01 = c01 * k, i02 = c02 * k, i12 = (b * c - a * e) * k
        return Matrix3(
            row0: Vector3(x: c00 * k, y: i01, z: i02),
            row1: Vector3(x: i01, y: (a * f - c * c) * k, z: i12),
            row2: Vector3(x: i02, y: i12, z: (a * d - b * b) * k))
    }

    /// The inverse by the adjugate; the caller guarantees a well-conditioned (here: positive definite) matrix.
    var inverse: Matrix3 {
        let c00 = row1.y * row2.z - row1.z * row2.y
        let c01 = row1.z * row2.x - row1.x * row2.z
        let c02 = row1.x * row2.y - row1.y * row2.x
        let det = row0.x * c00 + row0.y * c01 + row0.z * c02
        let k = 1 / det
        return Matrix3(
            row0: Vector3(x: c00 * k, y: (row0.z * row2.y - row0.y * row2.z) * k, z: (row0.y * row1.z - row0.z * row1.y) * k),
            row1: Vector3(x: c01 * k, y: (row0.x * row2.z - row0.z * row2.x) * k, z: (row0.z * row1.x - row0.x * row1.z) * k),
            row2: Vector3(x: c02 * k, y: (row0.y * row2.x - row0.x * row2.y) * k, z: (row0.x * row1.y - row0.y * row1.x) * k))
    }
}

extension Vector3 {
    @inline(__always) func dot(_ o: Vector3) -> Double { x * o.x + y * o.y + z * o.z }

    @inline(__always) func clamped(to limit: Double) -> Vector3 {
        Vector3(x: min(max(x, -limit), limit), y: min(max(y, -limit), limit), z: min(max(z, -limit), limit))
    }

    @inline(__always) var squaredLength: Double { x * x + y * y + z * z }
}
