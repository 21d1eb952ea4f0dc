import Foundation
import MotionCore
import Testing

@testable import MotionFusion

/// A polled magnetometer measures at its own rate, whatever it is read at: the fusion told that rate
/// (`setMagnetometerRate`) must behave as one made for it, every time constant of its heading path
/// being in seconds.
@Suite struct MagnetometerRateTests {
    /// The device lies still, its top edge 60° east of north (the Earth's field of Berlin, 19 µT
    /// horizontal and 46 µT down): gyroscope and accelerometer at 285.7 Hz, magnetometer at 100 Hz.
    static func feed(_ fusion: inout SensorFusion, seconds: Double) {
        let device = DeviceNumber(0)
        let yaw = 60.0 * .pi / 180
        // The field in device axes: north (0, 19, -46) in ENU, seen from a device turned by `yaw` clockwise.
        let field = Vector3(x: -19 * sin(yaw), y: 19 * cos(yaw), z: -46)
        var nextMagnetometer: Int64 = 0
        for k in 0..<Int(seconds * 285.714) {
            let t = Int64((Double(k) / 285.714) * 1e9)
            fusion.update(SensorSample(kind: .gyroscope, device: device, timestamp: t, vector: .zero))
            fusion.update(SensorSample(kind: .accelerometer, device: device, timestamp: t, vector: Vector3(x: 0, y: 0, z: 9.81)))
            if t >= nextMagnetometer {
                fusion.update(SensorSample(kind: .magnetometer, device: device, timestamp: t, vector: field))
                nextMagnetometer += 10_000_000
            }
        }
    }

    @Test func aFusionToldTheMagnetometersRateHeadsAsOneMadeForIt() {
        var madeFor = SensorFusion(gyroscopeRate: 285.714, magnetometerRate: 100)
        var told = SensorFusion(gyroscopeRate: 285.714, magnetometerRate: 285.714)
        told.setMagnetometerRate(100)
        var untold = SensorFusion(gyroscopeRate: 285.714, magnetometerRate: 285.714)
        Self.feed(&madeFor, seconds: 3)
        Self.feed(&told, seconds: 3)
        Self.feed(&untold, seconds: 3)
        // The whole state alike: calibrators, gains, disturbance detector, attitude (a fusion that did
        // not follow would differ in all of them, though at rest its heading ends where theirs does).
        #expect(told == madeFor)
        #expect(told.magnetometerRate == 100)
        #expect(untold != madeFor)
        let heading = madeFor.deviceMotion(in: .xMagneticNorthZVertical).heading!
        #expect(abs(heading - 60) < 1, "\(heading)")
    }
}
