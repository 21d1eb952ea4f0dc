import Foundation
import MotionCore
import Testing

@testable import MotionFusion

/// A buffered IMU's scan holds an accelerometer and a gyroscope sample of one instant, handed on in
/// channel order (the accelerometer's first on most chips). The inclination correction must compare
/// the accelerometer with the attitude at its instant, which the gyroscope's sample brings the
/// attitude to: whatever the order, the fusion is the one that integrates the gyroscope first.
@Suite struct SampleOrderTests {
    /// Turning about x at 2 rad/s (specific force rotating with it) and then about y, for 3 s at
    /// 285.7 Hz, each scan's samples handed on in the order given.
    static func fused(accelerometerFirst: Bool) -> SensorFusion {
        var fusion = SensorFusion(gyroscopeRate: 285.714)
        let device = DeviceNumber(0)
        var angle = 0.0
        for k in 0..<857 {
            let t = Int64(Double(k) / 285.714 * 1e9)
            let rate = k < 400 ? Vector3(x: 2, y: 0, z: 0) : Vector3(x: 0, y: 2, z: 0)
            angle += 2 / 285.714
            let force = Vector3(x: 0, y: 9.81 * sin(angle), z: 9.81 * cos(angle))
            let gyroscope = SensorSample(kind: .gyroscope, device: device, timestamp: t, vector: rate)
            let accelerometer = SensorSample(kind: .accelerometer, device: device, timestamp: t, vector: force)
            for sample in accelerometerFirst ? [accelerometer, gyroscope] : [gyroscope, accelerometer] { fusion.update(sample) }
        }
        return fusion
    }

    @Test func aScansAccelerometerHandedOnFirstIsFusedAfterItsGyroscope() {
        // The whole filter alike, bit for bit (printed, the two states run to pages).
        let alike = Self.fused(accelerometerFirst: true).filter == Self.fused(accelerometerFirst: false).filter
        #expect(alike)
    }

    /// An accelerometer on a chip of its own, stamped between two gyroscope samples, waits for the
    /// next one; but a gyroscope that stops holds up no more than one accelerometer sample.
    @Test func aGyroscopeThatStopsHoldsUpOneAccelerometerSampleAtMost() {
        var fusion = SensorFusion(gyroscopeRate: 100)
        let device = DeviceNumber(0)
        fusion.update(SensorSample(kind: .gyroscope, device: device, timestamp: 0, vector: .zero))
        var reference = fusion.filter
        let tipped = Vector3(x: 0, y: 4.9, z: 8.5)
        for k in 1...3 {
            fusion.update(SensorSample(kind: .accelerometer, device: device, timestamp: Int64(k) * 10_000_000, vector: tipped))
        }
        // The first two are fused, the third waits.
        for k in 1...2 {
            reference.update(accelerometer: tipped, timestamp: Int64(k) * 10_000_000)
        }
        let alike = fusion.filter == reference
        #expect(alike)
    }
}
