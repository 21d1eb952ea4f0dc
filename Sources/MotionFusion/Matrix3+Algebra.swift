import MotionCore

// The 3×3 algebra the bias estimator's Kalman update needs.
extension Matrix3 {
    static let zero = Matrix3(row0: .zero, row1: .zero, row2: .zero)

    static func diagonal(_ x: Double, _ y: Double, _ z: Double) -> Matrix3 {
        Matrix3(row0: Vector3(x: x, y: 0, z: 0), row1: Vector3(x: 0, y: y, z: 0), row2: Vector3(x: 0, y: 0, z: z))
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
    @inline(__always) func clamped(to limit: Double) -> Vector3 {
        Vector3(x: min(max(x, -limit), limit), y: min(max(y, -limit), limit), z: min(max(z, -limit), limit))
    }
}

extension Matrix3 {
    /// Eigenvalues and eigenvectors (the columns of `vectors`) of a symmetric matrix, by cyclic
    /// Jacobi rotations: `self = vectors × diag(values) × vectorsᵀ`. Allocates nothing.
    var symmetricEigen: (values: Vector3, vectors: Matrix3) {
        // Row-major 3×3 in fixed-size storage.
        var a: InlineArray<9, Double> = [row0.x, row0.y, row0.z, row1.x, row1.y, row1.z, row2.x, row2.y, row2.z]
        var v: InlineArray<9, Double> = [1, 0, 0, 0, 1, 0, 0, 0, 1]
        for _ in 0..<32 {
            if a[1] * a[1] + a[2] * a[2] + a[5] * a[5] < 1e-30 { break }
            for pair in 0..<3 {
                // (0, 1), (0, 2), (1, 2)
                let p = pair == 2 ? 1 : 0, q = pair == 0 ? 1 : 2
                guard a[p * 3 + q] != 0 else { continue }
                // The rotation that zeroes a[p][q] (Golub & Van Loan, the symmetric Schur decomposition).
                let theta = (a[q * 3 + q] - a[p * 3 + p]) / (2 * a[p * 3 + q])
                let t = (theta >= 0 ? 1.0 : -1.0) / (abs(theta) + (theta * theta + 1).squareRoot())
                let c = 1 / (t * t + 1).squareRoot(), s = t * c
                for k in 0..<3 {
                    let akp = a[k * 3 + p], akq = a[k * 3 + q]
                    a[k * 3 + p] = c * akp - s * akq
                    a[k * 3 + q] = s * akp + c * akq
                }
                for k in 0..<3 {
                    let apk = a[p * 3 + k], aqk = a[q * 3 + k]
                    a[p * 3 + k] = c * apk - s * aqk
                    a[q * 3 + k] = s * apk + c * aqk
                }
                for k in 0..<3 {
                    let vkp = v[k * 3 + p], vkq = v[k * 3 + q]
                    v[k * 3 + p] = c * vkp - s * vkq
                    v[k * 3 + q] = s * vkp + c * vkq
                }
            }
        }
        return (
            Vector3(x: a[0], y: a[4], z: a[8]),
            Matrix3(
                row0: Vector3(x: v[0], y: v[1], z: v[2]), row1: Vector3(x: v[3], y: v[4], z: v[5]),
                row2: Vector3(x: v[6], y: v[7], z: v[8])))
    }

    /// √(Σ elements²).
    var frobeniusNorm: Double { (row0.squaredLength + row1.squaredLength + row2.squaredLength).squareRoot() }

    /// `vectors × diag(values) × vectorsᵀ`.
    static func symmetric(values: Vector3, vectors e: Matrix3) -> Matrix3 {
        let d = Matrix3.diagonal(values.x, values.y, values.z)
        return e * d * e.transposed
    }
}
