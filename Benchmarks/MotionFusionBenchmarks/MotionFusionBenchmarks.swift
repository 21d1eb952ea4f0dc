import Benchmark
import Foundation
import MotionCore
import MotionFusion

// The fusion core's cost per 9D sample (gyroscope + accelerometer + magnetometer update, with the
// magnetometer calibration) in release mode, and its allocations (must be 0).
// And the step detector with the activity classifier per accelerometer sample, the gesture
// recognizer, and the altimeter per pressure reading.
// Run: swift package --disable-sandbox benchmark --target MotionFusionBenchmarks

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .instructions],
        scalingFactor: .kilo,
        maxDuration: .seconds(3))

    // Ten seconds of a device turning about a tilted axis at 285.7 Hz, made once.
    let samples = motion(rate: 285.714, seconds: 10)

    Benchmark("9D sample: gyroscope + accelerometer + magnetometer") { benchmark in
        var fusion = SensorFusion(gyroscopeRate: 285.714)
        var index = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            let s = samples[index]
            fusion.update(s.0)
            fusion.update(s.1)
            fusion.update(s.2)
            index = index + 1 == samples.count ? 0 : index + 1
        }
        benchmark.stopMeasurement()
        blackHole(fusion.filter.attitude)
    }

    for (name, kind) in [("gyroscope update", 0), ("accelerometer update", 1), ("magnetometer update", 2)] {
        Benchmark(name) { benchmark in
            var fusion = SensorFusion(gyroscopeRate: 285.714)
            for s in samples.prefix(3000) { fusion.update(s.0); fusion.update(s.1); fusion.update(s.2) }
            var index = 0
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                let s = samples[index]
                fusion.update(kind == 0 ? s.0 : kind == 1 ? s.1 : s.2)
                index = index + 1 == samples.count ? 0 : index + 1
            }
            benchmark.stopMeasurement()
            blackHole(fusion.filter.attitude)
        }
    }

    // A walk at 50 Hz (1.8 steps/s, a vertical jolt each), made once: the pedometer's and the
    // activity's cost per accelerometer sample, walking (the detector's window looked at twice a
    // second, steps counted).
    let walk = (0..<(60 * 50)).map { i -> (Vector3, Int64) in
        let t = Double(i) / 50
        let phase = (t * 1.8).truncatingRemainder(dividingBy: 1)
        let jolt: Double = phase < 0.3 ? 1.5 * (1 - cos(2 * Double.pi * phase / 0.3)) : 0
        return (Vector3(x: 0.5, y: 2, z: 9.6 + jolt), Int64(t * 1e9))
    }
    Benchmark("step detector + activity classifier, one 50 Hz sample of a walk") { benchmark in
        var detector = StepDetector()
        var classifier = ActivityClassifier()
        var steps = 0
        var index = 0, lap: Int64 = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            let (force, time) = walk[index]
            // Laps follow each other in time, so that the walk goes on rather than starting over.
            let timestamp = time + lap * 60_000_000_000
            detector.update(specificForce: force, timestamp: timestamp) { _ in steps += 1 }
            blackHole(classifier.update(specificForce: force, timestamp: timestamp, detector: detector))
            index += 1
            if index == walk.count { index = 0; lap += 1 }
        }
        benchmark.stopMeasurement()
        blackHole(steps)
    }

    Benchmark("gesture recognizer (shake, pick-up, significant motion), one 50 Hz sample of a walk") { benchmark in
        var recognizer = GestureRecognizer()
        var gestures = 0
        var index = 0, lap: Int64 = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            let (force, time) = walk[index]
            recognizer.update(specificForce: force, timestamp: time + lap * 60_000_000_000, isWalking: index % 100 < 50) { _ in gestures += 1 }
            index += 1
            if index == walk.count { index = 0; lap += 1 }
        }
        benchmark.stopMeasurement()
        blackHole(gestures)
    }

    Benchmark("altimeter, one pressure reading") { benchmark in
        var altimeter = AltitudeEstimator()
        var time: Int64 = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            time += 40_000_000
            blackHole(altimeter.update(pressure: 95 + Double(time % 7) * 1e-4, timestamp: time))
        }
        benchmark.stopMeasurement()
    }

    Benchmark("device motion in the magnetic-north frame") { benchmark in
        var fusion = SensorFusion(gyroscopeRate: 285.714)
        for s in samples.prefix(3000) { fusion.update(s.0); fusion.update(s.1); fusion.update(s.2) }
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(fusion.deviceMotion(in: .xMagneticNorthZVertical))
        }
        benchmark.stopMeasurement()
    }
}

func motion(rate: Double, seconds: Double) -> [(SensorSample, SensorSample, SensorSample)] {
    let axis = Vector3(x: 0.3, y: 0.5, z: 0.81)
    let omega = axis * (1.2 / axis.length)
    let step = Quaternion(angle: 1.2 / rate, axis: axis * (1 / axis.length))
    var q = Quaternion.identity
    var result: [(SensorSample, SensorSample, SensorSample)] = []
    for i in 0..<Int(rate * seconds) {
        q = (q * step).normalized
        let t = Int64(Double(i) / rate * 1e9)
        let toDevice = q.conjugate
        result.append((
            SensorSample(kind: .gyroscope, device: DeviceNumber(0), timestamp: t, vector: omega),
            SensorSample(kind: .accelerometer, device: DeviceNumber(0), timestamp: t, vector: toDevice.rotate(Vector3(x: 0, y: 0, z: 9.81))),
            SensorSample(kind: .magnetometer, device: DeviceNumber(0), timestamp: t, vector: toDevice.rotate(Vector3(x: 0, y: 19, z: -46)) + Vector3(x: 3, y: -2, z: 5))))
    }
    return result
}
