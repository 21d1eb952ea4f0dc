import Foundation
import MotionCore
@testable import MotionCtlCommands
import Testing

/// How much of the sphere `motionctl calibrate magnetometer` has seen the field from, counted around
/// the offset motiond has learnt so far.
@Suite struct DirectionCoverageTests {
    /// Fields on a sphere of 40 µT around a hard-iron offset of (50, 0, 0) µT, from every direction
    /// (a Fibonacci lattice of 2,000 points, each within a few degrees of the next).
    static let fields: [Vector3] = (0..<2000).map { i in
        let z = 1 - 2 * (Double(i) + 0.5) / 2000, r = (1 - z * z).squareRoot(), phi = Double(i) * 2.399963229728653
        return Vector3(x: 50 + 40 * r * cos(phi), y: 40 * r * sin(phi), z: 40 * z)
    }

    /// Seen from the true offset, every one of the 72 areas; seen from the origin (before the offset
    /// was learnt), the sphere fills only the cone of half-angle asin(40/50) = 53° around +x, a fifth
    /// of the sphere ((1 − cos 53°)/2 = 0.2), and the areas it touches. Counted again when the offset
    /// moves: the count kept before was of the wrong centre.
    @Test func theDirectionsAreCountedAgainAroundTheOffsetAsItMoves() {
        var coverage = DirectionCoverage()
        for field in Self.fields { coverage.add(field) }
        let fromTheOrigin = coverage.fraction(around: .zero)
        #expect(fromTheOrigin > 0.15 && fromTheOrigin < 0.45, "\(fromTheOrigin)")
        #expect(coverage.fraction(around: Vector3(x: 50, y: 0, z: 0)) == 1)
    }

    /// Past its limit the kept fields are thinned, not grown, and the directions they cover stay.
    @Test func theFieldsKeptAreBoundedAndTheirDirectionsStay() {
        var coverage = DirectionCoverage()
        for _ in 0..<10 { for field in Self.fields { coverage.add(field) } }
        #expect(coverage.fields.count <= DirectionCoverage.limit)
        #expect(coverage.fraction(around: Vector3(x: 50, y: 0, z: 0)) == 1)
    }
}
