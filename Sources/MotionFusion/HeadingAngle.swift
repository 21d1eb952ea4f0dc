#if canImport(Glibc)
import Glibc
#endif

/// An angle about the vertical, rad, kept with its cosine and sine, so that the heading correction
/// measures its error and turns it by a small step without a trigonometric function per
/// magnetometer sample (glibc's `atan2` took 6 % of the fusion's time). Small errors and steps use
/// short series; larger ones (the first corrections, a turn seen after a disturbance) the C library.
struct HeadingAngle: Sendable, Codable, Equatable {
    /// The angle, rad, in (−π, π].
    private(set) var radians = 0.0
    private var cosine = 1.0
    private var sine = 0.0

    /// The angle, rad, in [−π, π], from this heading to the horizontal direction whose east and
    /// north components are given (in any one unit): the error of the heading when that direction
    /// is north.
    @inline(__always)
    func error(east: Double, north: Double) -> Double {
        // The sine and cosine of the difference, up to the direction's length.
        let y = east * cosine - north * sine
        let x = north * cosine + east * sine
        guard x > 0 && abs(y) < 0.1 * x else { return atan2(y, x) }
        // atan t = t (1 − t²/3 + t⁴/5 − …): to t⁵ the error is below 1.5e-8 rad for |t| < 0.1, and
        // what the heading takes of it is that times the correction's gain (some 1e-4 a sample).
        let t = y / x
        let s = t * t
        return t * (1 - s * (1 / 3.0 - s * (1 / 5.0)))
    }

    /// Turns the heading by `angle`, rad.
    @inline(__always)
    mutating func turn(by angle: Double) {
        radians = wrapAngle(radians + angle)
        guard abs(angle) < 1e-3 else {
            cosine = cos(radians)
            sine = sin(radians)
            return
        }
        // A step of at most a milliradian (the correction's gain is some 1e-4): cos ≈ 1 − a²/2 and
        // sin ≈ a − a³/6 turn by the step to within 1e-16 rad; the length, off by some a⁴/12, is
        // put right only once it has drifted by 1e-13.
        let h = angle * angle
        let c = 1 - 0.5 * h
        let s = angle * (1 - h * (1 / 6.0))
        let nextCosine = cosine * c - sine * s
        let nextSine = sine * c + cosine * s
        let n = nextCosine * nextCosine + nextSine * nextSine
        let k = abs(n - 1) > 1e-13 ? (3 - n) * 0.5 : 1
        cosine = nextCosine * k
        sine = nextSine * k
    }
}
