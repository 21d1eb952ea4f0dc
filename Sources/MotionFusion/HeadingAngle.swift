#if canImport(Glibc)
import Glibc
#endif

/// An angle about the vertical, rad, kept with its cosine and sine, so that the heading correction
/// measures its error and turns it by a small step without a trigonometric function per
/// magnetometer sample (glibc's `atan2` took 8 % of the fusion's time). Both small-angle cases use
/// series accurate to rounding; larger angles (the first corrections) use the C library.
struct HeadingAngle: Sendable, Codable, Equatable {
    /// The angle, rad, in (−π, π].
    private(set) var radians = 0.0
    private var cosine = 1.0
    private var sine = 0.0

    init() {}

    /// The angle, rad, in (−π, π], from this heading to the horizontal direction whose east and
    /// north components are given (in any one unit): the error of the heading when that direction
    /// is north.
    @inline(__always)
    func error(east: Double, north: Double) -> Double {
        // The sine and cosine of the difference, up to the direction's length.
        let y = east * cosine - north * sine
        let x = north * cosine + east * sine
        guard x > 0 && abs(y) < 0.1 * x else { return atan2(y, x) }
        // atan t = t (1 − t²/3 + t⁴/5 − …); for |t| < 0.1 the terms to t¹⁵ leave an error below 1e-17 t.
        let t = y / x
        let s = t * t
        return t * (1 - s * (1 / 3.0 - s * (1 / 5.0 - s * (1 / 7.0 - s * (1 / 9.0 - s * (1 / 11.0 - s * (1 / 13.0 - s * (1 / 15.0))))))))
    }

    /// Turns the heading by `angle`, rad.
    @inline(__always)
    mutating func turn(by angle: Double) {
        radians = wrapAngle(radians + angle)
        guard abs(angle) < 0.01 else {
            cosine = cos(radians)
            sine = sin(radians)
            return
        }
        // cos and sin of the step from their series (error below 1e-20 for |angle| < 0.01), then
        // one Newton step back to unit length, against rounding adding up over hours.
        let h = angle * angle
        // (Constant reciprocals: a division by a constant stays a division.)
        let c = 1 - h * 0.5 * (1 - h * (1 / 12.0) * (1 - h * (1 / 30.0)))
        let s = angle * (1 - h * (1 / 6.0) * (1 - h * (1 / 20.0) * (1 - h * (1 / 42.0))))
        let nextCosine = cosine * c - sine * s
        let nextSine = sine * c + cosine * s
        let k = (3 - (nextCosine * nextCosine + nextSine * nextSine)) * 0.5
        cosine = nextCosine * k
        sine = nextSine * k
    }
}
