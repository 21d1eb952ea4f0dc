import Foundation
import MotionCore
import Testing

@testable import MotionFusion

@Suite struct OrientationDetectorTests {
    /// Gravity (g, CoreMotion's sign) of a device turned `roll` about the screen normal from upright,
    /// tilted back by `tilt` from vertical (0 = upright, 90° = flat face up).
    func gravity(inPlane angle: Double, tiltBack tilt: Double = 0) -> Vector3 {
        let a = angle * .pi / 180, t = tilt * .pi / 180
        // Upright: gravity −y. Raising the right edge by `a` turns gravity toward −x (the right edge is up).
        return Vector3(x: -sin(a) * cos(t), y: -cos(a) * cos(t), z: -sin(t))
    }

    @Test(arguments: [
        (0.0, ScreenOrientation.normal), (90.0, .rightUp), (-90.0, .leftUp), (180.0, .bottomUp),
    ])
    func eachEdgeUpGivesItsState(angle: Double, expected: ScreenOrientation) {
        var detector = OrientationDetector()
        #expect(detector.update(gravity: gravity(inPlane: angle)) == expected)
    }

    @Test func flatIsFaceUpOrFaceDown() {
        var detector = OrientationDetector()
        #expect(detector.update(gravity: Vector3(x: 0, y: 0, z: -1)) == .faceUp)
        #expect(detector.update(gravity: Vector3(x: 0, y: 0, z: 1)) == .faceDown)
        // Tilted back 70° from upright (20° from flat): face up; at 30° back, upright.
        var fresh = OrientationDetector()
        #expect(fresh.update(gravity: gravity(inPlane: 0, tiltBack: 70)) == .faceUp)
        #expect(fresh.update(gravity: gravity(inPlane: 0, tiltBack: 30)) == .normal)
    }

    @Test func aDeviceHeldNearFortyFiveDegreesDoesNotFlap() {
        var detector = OrientationDetector()
        detector.update(gravity: gravity(inPlane: 0))
        var states: [ScreenOrientation] = []
        for angle in [40.0, 46, 44, 48, 42, 47] { states.append(detector.update(gravity: gravity(inPlane: angle))) }
        #expect(states.allSatisfy { $0 == .normal }, "\(states)")
        #expect(detector.update(gravity: gravity(inPlane: 51)) == .rightUp)
        #expect(detector.update(gravity: gravity(inPlane: 44)) == .rightUp, "and back only past 40°")
        #expect(detector.update(gravity: gravity(inPlane: 39)) == .normal)
    }

    @Test func freeFallKeepsTheLastState() {
        var detector = OrientationDetector()
        detector.update(gravity: gravity(inPlane: 90))
        #expect(detector.update(gravity: Vector3(x: 0.01, y: 0, z: 0.02)) == .rightUp)
    }
}
