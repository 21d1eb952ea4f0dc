import MotionCore
import Testing

@testable import MotionFusion

/// A heading in a north frame is north's, or none: a magnetometer read before the fusion knows its
/// tilt (the first samples after a resume or a restart, issue 62: the D-Bus drop-in's compass claims
/// returned 0.0 in 7 of 8 tries) is not used by the filter, so it sets no heading either.
@Suite struct FirstHeadingTests {
    static let g = Units.standardGravity

    /// With a gyroscope (`OrientationFilter`) and without (`GyroscopeFreeFilter`, a tablet's
    /// accelerometer and magnetometer).
    @Test(arguments: [true, false])
    func aFieldReadBeforeTheTiltGivesNoHeadingUntilOneIsTaken(gyroscope: Bool) {
        var fusion = SensorFusion(gyroscopeRate: gyroscope ? 100 : nil, accelerometerRate: 100, magnetometerRate: 50)
        // Lying flat, top edge pointing east: the horizontal field (north) lies along the device's −x.
        let field = Vector3(x: -20, y: 0, z: -40)
        fusion.update(SensorSample(kind: .magnetometer, device: DeviceNumber(0), timestamp: 1_000_000, vector: field))
        #expect(fusion.deviceMotion(in: .xMagneticNorthZVertical).heading == nil, "no tilt yet: the field was not taken")
        var t: Int64 = 2_000_000
        for _ in 0..<20 {
            if gyroscope { fusion.update(SensorSample(kind: .gyroscope, device: DeviceNumber(0), timestamp: t, vector: .zero)) }
            fusion.update(SensorSample(kind: .accelerometer, device: DeviceNumber(0), timestamp: t, vector: Vector3(x: 0, y: 0, z: Self.g)))
            t += 10_000_000
        }
        #expect(fusion.deviceMotion(in: .xMagneticNorthZVertical).heading == nil)
        fusion.update(SensorSample(kind: .magnetometer, device: DeviceNumber(0), timestamp: t, vector: field))
        let heading = try! #require(fusion.deviceMotion(in: .xMagneticNorthZVertical).heading)
        // The top edge (+y) points east: 90° clockwise from magnetic north.
        #expect(abs(heading - 90) < 1, "\(heading)°")
    }
}
