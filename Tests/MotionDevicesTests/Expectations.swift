import MotionCore
import Testing

/// Checks that two vectors agree to `relative` of the larger magnitude (1e-6 by default).
func expectClose(
    _ actual: Vector3, _ expected: Vector3, relative: Double = 1e-6,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    let scale = max(expected.length, 1e-12)
    for axis in Axis.allCases {
        #expect(
            abs(actual[axis] - expected[axis]) <= relative * scale,
            "\(axis): \(actual[axis]) vs expected \(expected[axis])", sourceLocation: sourceLocation)
    }
}
