import Foundation
import Testing

@testable import MotionFusion

/// `HeadingAngle` against the C library's `atan2`, `cos` and `sin`, the functions its series stand
/// in for.
@Suite struct HeadingAngleTests {
    /// A heading turned to `radians` in one step (the library's cos and sin).
    static func heading(at radians: Double) -> HeadingAngle {
        var heading = HeadingAngle()
        heading.turn(by: radians)
        return heading
    }

    /// The error toward a direction equals the wrapped difference of `atan2` angles, within 2e-8 rad
    /// (the series' bound, 1.5e-8, below 5.7° of error; rounding beyond), for headings and
    /// directions all round the circle, errors of every size.
    @Test func theErrorIsTheWrappedDifferenceOfAngles() {
        var largest = 0.0
        for h in stride(from: -3.1, through: 3.1, by: 0.37) {
            let heading = Self.heading(at: h)
            for e in stride(from: -3.1, through: 3.1, by: 0.013) {
                let direction = h + e
                let expected = remainder(atan2(sin(direction), cos(direction)) - h, 2 * .pi)
                let error = heading.error(east: 40 * sin(direction), north: 40 * cos(direction))
                largest = max(largest, abs(error - expected))
            }
        }
        #expect(largest < 2e-8, "\(largest) rad")
    }

    /// A million steps of 1e-4 rad (the correction's size at 285.7 Hz) land where one turn of their
    /// sum does: the cosine and sine kept by the series agree with the library's at the angle reached,
    /// within 1e-9.
    @Test func manySmallStepsKeepTheCosineAndSineOfTheAngle() {
        var stepped = HeadingAngle()
        for _ in 0..<1_000_000 { stepped.turn(by: 1e-4) }
        let direct = Self.heading(at: stepped.radians)
        // Equal errors toward the same two directions mean equal cosine and sine.
        for direction in [0.0, 1.0, 2.5] {
            let a = stepped.error(east: sin(direction), north: cos(direction))
            let b = direct.error(east: sin(direction), north: cos(direction))
            #expect(abs(a - b) < 1e-9, "\(a) against \(b)")
        }
        #expect(abs(remainder(stepped.radians - 100, 2 * .pi)) < 1e-9, "\(stepped.radians)")
    }
}
