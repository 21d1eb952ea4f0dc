import Benchmark
import Foundation
import MotionCore
import MotionFusion

// The fusion core's cost per 9D sample (gyroscope + accelerometer + magnetometer update, with the
// magnetometer calibration) in release mode, and its allocations (must be 0).
// And the step detector with the activity classifier per accelerometer sample, the gesture
// recognizer, the altimeter per pressure reading, and the presence detector per reading.
// Run: swift package --disable-sandbox benchmark --target MotionFusionBenchmarks

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .instructions],
        scalingFactor: .kilo,
        maxDuration: .seconds(3))

    // Ten seconds of a tumbling device at 285.7 Hz, made once (`motion`). Lap after lap the motion and
    // the stamps go on without a jump: a lap that started again at time 0 measured the fusion
    // resynchronising (a restarted clock fit, an attitude and a heading far from the samples').
    let period: Int64 = 3_500_000
    let samples = motion(period: period, seconds: 10)
    let lapLength = Int64(samples.count) * period

    // The fusion as it runs for hours, not its first seconds: each measurement times the 3.5 s
    // (1000 samples) after three laps (30 s, past the heading's first convergence and the
    // calibrators' first fits). Started cold, every measurement timed the first 3.5 s of a new
    // fusion: the heading converging from far off, the magnetometer not yet calibrated.
    let warmUpLaps: Int64 = 3
    func warmFusion() -> SensorFusion {
        var fusion = SensorFusion(gyroscopeRate: 1e9 / Double(period))
        for lap in 0..<warmUpLaps {
            for s in samples {
                fusion.update(s.0.later(by: lap * lapLength))
                fusion.update(s.1.later(by: lap * lapLength))
                fusion.update(s.2.later(by: lap * lapLength))
            }
        }
        return fusion
    }

    Benchmark("9D sample: gyroscope + accelerometer + magnetometer") { benchmark in
        var fusion = warmFusion()
        var index = 0, lap = warmUpLaps * lapLength
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            let s = samples[index]
            fusion.update(s.0.later(by: lap))
            fusion.update(s.1.later(by: lap))
            fusion.update(s.2.later(by: lap))
            index += 1
            if index == samples.count { index = 0; lap += lapLength }
        }
        benchmark.stopMeasurement()
        blackHole(fusion.filter.attitude)
    }

    // One kind of sample alone, from the warm fusion: the device then holds the pose it had at the
    // end of the warm-up (the gyroscope's, turning at its last rate), and that sample comes again at
    // the IMU's period. Fed one kind of a moving device's samples, the others' absence made the
    // magnetometer's field look disturbed (its updates returned early) and the accelerometer's tilt
    // far off (the slow branch of the correction).
    for (name, kind) in [("gyroscope update", 0), ("accelerometer update", 1), ("magnetometer update", 2)] {
        Benchmark(name) { benchmark in
            var fusion = warmFusion()
            let last = samples[samples.count - 1]
            let held = kind == 0 ? last.0 : kind == 1 ? last.1 : last.2
            var later = (warmUpLaps - 1) * lapLength
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                later += period
                fusion.update(held.later(by: later))
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

    Benchmark("presence detector, one 10 Hz reading of a sensor flapping every 0.3 s") { benchmark in
        var detector = PresenceDetector()
        var reports = 0
        var time: Int64 = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            time += 100_000_000
            let present = time / 300_000_000 % 2 == 0
            if detector.update(present: present, attention: present ? 100 : 0, distance: 0.65, timestamp: time) != nil { reports += 1 }
        }
        benchmark.stopMeasurement()
        blackHole(reports)
    }

    Benchmark("device motion in the magnetic-north frame") { benchmark in
        var fusion = SensorFusion(gyroscopeRate: 1e9 / Double(period))
        for s in samples.prefix(3000) { fusion.update(s.0); fusion.update(s.1); fusion.update(s.2) }
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(fusion.deviceMotion(in: .xMagneticNorthZVertical))
        }
        benchmark.stopMeasurement()
    }
}

/// `seconds` of a device tumbling at the IMU's rate: turning about its own x axis (two turns) while
/// that axis turns about the vertical (one turn), so that the field comes from enough directions
/// (within ±22° of the device's y-z plane) for the magnetometer's hard-iron offset (3, −2, 5) µT to
/// be learnt, which a turn about one axis cannot teach; whole turns, so that the end joins the start. Gyroscope (rad/s, device frame), specific force (m/s²) and
/// field (µT) samples stamped `period` ns apart.
func motion(period: Int64, seconds: Double) -> [(SensorSample, SensorSample, SensorSample)] {
    let count = Int(seconds * 1e9 / Double(period))
    let dt = Double(period) * 1e-9
    let vertical = 2 * Double.pi / (Double(count) * dt), roll = 2 * vertical
    var result: [(SensorSample, SensorSample, SensorSample)] = []
    for i in 0..<count {
        let t = Double(i) * dt
        let turn = Quaternion(angle: roll * t, axis: Vector3(x: 1, y: 0, z: 0))
        // Device → earth: the roll about the device's x, then the turn about the vertical.
        let q = Quaternion(angle: vertical * t, axis: Vector3(x: 0, y: 0, z: 1)) * turn
        let toDevice = q.conjugate
        let rate = turn.conjugate.rotate(Vector3(x: 0, y: 0, z: vertical)) + Vector3(x: roll, y: 0, z: 0)
        let stamp = Int64(i) * period
        result.append((
            SensorSample(kind: .gyroscope, device: DeviceNumber(0), timestamp: stamp, vector: rate),
            SensorSample(kind: .accelerometer, device: DeviceNumber(0), timestamp: stamp, vector: toDevice.rotate(Vector3(x: 0, y: 0, z: 9.81))),
            SensorSample(
                kind: .magnetometer, device: DeviceNumber(0), timestamp: stamp,
                vector: toDevice.rotate(Vector3(x: 0, y: 19, z: -46)) + Vector3(x: 3, y: -2, z: 5))))
    }
    return result
}

extension SensorSample {
    /// The sample `nanoseconds` later.
    func later(by nanoseconds: Int64) -> SensorSample {
        var sample = self
        sample.timestamp += nanoseconds
        return sample
    }
}
