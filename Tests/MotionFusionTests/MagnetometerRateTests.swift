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

    /// A magnetometer rate that is no rate (NaN, 0, infinite) makes the fusion the IMU's rate, not a
    /// crash (`SoftIronCalibrator` converted it to an Int).
    @Test func aMagnetometerRateThatIsNoRateIsTheIMUs() {
        let reference = SensorFusion(gyroscopeRate: 100, magnetometerRate: 100)
        for rate in [Double.nan, 0, .infinity, -5] {
            let fusion = SensorFusion(gyroscopeRate: 100, magnetometerRate: rate)
            #expect(fusion == reference, "magnetometer rate \(rate)")
        }
    }

    /// Every magnetometer sample reaches the heading path, at any rate. It used to take every
    /// `Int(rate / 100)`-th: a cliff at 200 Hz, where a magnetometer measured at 199.6 Hz (live, over
    /// 2 s) was fused at 199.6 Hz and the same one measured at 202 Hz (offline, over a 45 s slice) at
    /// 101 Hz, with other disturbance-detector windows; on a recorded magnet trial the two headings
    /// came out 2° apart. Here a still device whose field has turned 20° is corrected toward it by
    /// each sample of a 285.7 Hz magnetometer, not by every second one.
    @Test func everyMagnetometerSampleCorrectsTheHeading() {
        var simulation = Simulation(rate: 285.714)
        simulation.fusion = SensorFusion(gyroscopeRate: 285.714, magnetometerRate: 285.714)
        let still = turn(30, about: .z)
        simulation.hold(still, seconds: 8)
        simulation.earthField = turn(20, about: .z).rotate(simulation.earthField)
        var headings: [Double] = []
        for _ in 0..<20 {
            simulation.hold(still, seconds: 1 / 285.714)
            headings.append(simulation.fusion.deviceMotion(in: .xMagneticNorthZVertical).heading!)
        }
        let steps = zip(headings.dropFirst(), headings).map { $0 - $1 }
        #expect(steps.allSatisfy { abs($0) > 1e-6 }, "heading steps \(steps)")
    }

    /// The rate is measured once the fusion runs, often in motion: the disturbance detector must keep
    /// what it learnt of the undisturbed field. A detector starts out judging the field disturbed (the
    /// heading corrected at half gain) and accepts the first field after 5 s of seeing it steady while
    /// the device turns (VQF's rule); started afresh by a rate change, it lost those seconds, and the
    /// live stream, whose magnetometer's rate is measured only once it moves, had its heading drift
    /// 1° from the offline path's in 30 s.
    @Test func aRateChangeKeepsWhatTheDisturbanceDetectorLearnt() {
        var fusion = SensorFusion(gyroscopeRate: 285.714, magnetometerRate: 285.714)
        let device = DeviceNumber(0)
        let rate = 30.0 * .pi / 180  // turning about the vertical, above the detector's 20 °/s
        func turn(from start: Double, seconds: Double) {
            var nextMagnetometer = Int64(start * 1e9)
            for k in Int(start * 285.714)..<Int((start + seconds) * 285.714) {
                let t = Int64(Double(k) / 285.714 * 1e9)
                fusion.update(SensorSample(kind: .gyroscope, device: device, timestamp: t, vector: Vector3(x: 0, y: 0, z: rate)))
                fusion.update(SensorSample(kind: .accelerometer, device: device, timestamp: t, vector: Vector3(x: 0, y: 0, z: 9.81)))
                if t >= nextMagnetometer {
                    let yaw = rate * Double(t) * 1e-9
                    fusion.update(SensorSample(kind: .magnetometer, device: device, timestamp: t, vector: Vector3(x: 19 * sin(yaw), y: 19 * cos(yaw), z: -46)))
                    nextMagnetometer += 10_000_000
                }
            }
        }
        turn(from: 0, seconds: 3)
        fusion.setMagnetometerRate(100)
        #expect(fusion.filter.isMagneticFieldDisturbed)
        turn(from: 3, seconds: 4.5)
        // The field seen steady while turning for 1 s (the fusion took the 100 Hz magnetometer for a
        // 285.7 Hz one, and counted its samples as 7 ms each) and then 4.5 s: accepted, its strength
        // that of the field fed (√(19² + 46²) µT).
        #expect(fusion.filter.isMagneticFieldDisturbed == false)
        #expect(abs(fusion.filter.referenceFieldStrength - (19.0 * 19 + 46 * 46).squareRoot()) < 0.5, "\(fusion.filter.referenceFieldStrength) µT")
    }

    /// The hard-iron fit needs a second of readings spread over the sphere (evaluated every 0.2 s). A
    /// calibrator told of a new rate 0.8 s in keeps what it gathered and fits 0.5 s later; one started
    /// afresh would have only those 0.5 s.
    @Test func aRateChangeKeepsTheHardIronWindow() {
        let offset = Vector3(x: 20, y: -10, z: 5)
        // A tumbling device: its field (45 µT) sweeps the sphere once in 1.3 s.
        func reading(at t: Double) -> Vector3 {
            let polar = Double.pi * t / 1.3, azimuth = 2 * Double.pi * 5 * t
            return offset + Vector3(x: sin(polar) * cos(azimuth), y: sin(polar) * sin(azimuth), z: cos(polar)) * 45
        }
        var calibrator = MagnetometerCalibrator(rate: 50)
        for k in 0..<40 { _ = calibrator.calibrate(reading(at: Double(k) / 50)) }  // 0.8 s: not yet a fit
        #expect(calibrator.offsetError == nil)
        calibrator.setRate(100)
        for k in 0..<50 { _ = calibrator.calibrate(reading(at: 0.8 + Double(k) / 100)) }  // 0.5 s more
        let error = (calibrator.offset - offset).length
        #expect(calibrator.offsetError != nil && error < 0.5, "offset \(calibrator.offset) µT, \(error) µT off")
    }

    /// A polled magnetometer's previous measurement read again (`SensorSample.isRepeat`) is no news:
    /// fused, it would count as a sample, and every timer of the heading path would run fast.
    @Test func aRepeatedReadingIsNoNewsToTheFusion() {
        var fusion = SensorFusion(gyroscopeRate: 285.714, magnetometerRate: 100)
        Self.feed(&fusion, seconds: 1)
        let before = fusion
        let field = Vector3(x: -19 * sin(60.0 * .pi / 180), y: 19 * cos(60.0 * .pi / 180), z: -46)
        fusion.update(SensorSample(kind: .magnetometer, device: DeviceNumber(0), timestamp: 1_001_000_000, vector: field, isRepeat: true))
        #expect(fusion == before)
        fusion.update(SensorSample(kind: .magnetometer, device: DeviceNumber(0), timestamp: 1_002_000_000, vector: field))
        #expect(fusion != before)
    }
}
