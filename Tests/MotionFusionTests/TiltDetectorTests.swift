import Foundation
import MotionCore
import Testing

@testable import MotionFusion

@Suite struct TiltDetectorTests {
    /// Gravity (g, CoreMotion's sign) of a device upright and leaning back by `degrees` (90: face up).
    func leaningBack(_ degrees: Double) -> Vector3 {
        let t = degrees * .pi / 180
        return Vector3(x: 0, y: -cos(t), z: -sin(t))
    }

    @Test(arguments: [
        (0.0, ScreenTilt.vertical), (15, .vertical), (-15, .vertical), (45, .tiltedUp), (-45, .tiltedDown),
        (80, .faceUp), (-80, .faceDown), (90, .faceUp), (-90, .faceDown),
    ])
    func eachBandGivesItsState(degrees: Double, expected: ScreenTilt) {
        var detector = TiltDetector()
        #expect(detector.update(gravity: leaningBack(degrees)) == expected)
    }

    /// iio-sensor-proxy reports its fake accelerometer at (0, −300, 950) counts as `face-up` (the
    /// issue's measurement of 3.9): in motiond's frame that reading is gravity (0, −0.301, −0.954) g.
    @Test func iioSensorProxysFaceUpExampleIsFaceUp() {
        var detector = TiltDetector()
        let length = (300.0 * 300 + 950 * 950).squareRoot()
        #expect(detector.update(gravity: Vector3(x: 0, y: -300 / length, z: -950 / length)) == .faceUp)
    }

    @Test func aStateIsLeftOnlyPastItsBoundaryAndTheHysteresis() {
        var detector = TiltDetector()
        #expect(detector.update(gravity: leaningBack(10)) == .vertical)
        #expect(detector.update(gravity: leaningBack(23)) == .vertical, "within 5° past 20°")
        #expect(detector.update(gravity: leaningBack(26)) == .tiltedUp)
        #expect(detector.update(gravity: leaningBack(17)) == .tiltedUp, "within 5° back")
        #expect(detector.update(gravity: leaningBack(14)) == .vertical)
        #expect(detector.update(gravity: leaningBack(76)) == .faceUp)
        #expect(detector.update(gravity: leaningBack(67)) == .faceUp)
        #expect(detector.update(gravity: leaningBack(64)) == .tiltedUp)
    }
}
