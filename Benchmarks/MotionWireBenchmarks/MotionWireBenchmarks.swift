import Benchmark
import MotionCore
import MotionWire

// Why motiond writes its per-sample lines by hand: one MOTION line by `LineWriter` (the hot path)
// against Foundation's JSONEncoder (`Wire.encode`, used for replies), in release mode, with the
// allocations of each.
// Run: swift package --disable-sandbox benchmark --target MotionWireBenchmarks

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .instructions],
        scalingFactor: .kilo,
        maxDuration: .seconds(3))

    let motion = MotionMessage(
        timestamp: 5_010_000_000, frame: .xMagneticNorthZVertical,
        attitude: AttitudeMessage(
            quaternion: Quaternion(w: 0.7071068, x: 0.001, y: -0.0002, z: -0.7071068), roll: 0.0021, pitch: -0.0013, yaw: -1.5707963,
            rotationMatrix: Matrix3(rowMajor: [0, -1, 0.000012, 1, 0, 0, 0, 0.5, 1])),
        gravity: Vector3(x: 0.01, y: -0.02, z: -0.9998), userAcceleration: Vector3(x: 1e-7, y: 0, z: 3.25),
        rotationRate: Vector3(x: 0.01, y: 0, z: -12.5),
        magneticField: CalibratedFieldMessage(field: Vector3(x: 0, y: 19.25, z: -46), accuracy: .high), heading: 359.5)

    Benchmark("MOTION line: LineWriter") { benchmark in
        var writer = LineWriter()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            writer.write(motion)
            blackHole(writer.bytes.count)
        }
    }

    // What the pipeline asks of every sample it sends, through the message catalogue: the message's
    // stream and that stream's entry. Allocates nothing (mallocCountTotal 0).
    Benchmark("MOTION message: its stream and the stream's sampling") { benchmark in
        let message = AnyServerMessage.motion(motion)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(message.stream?.isEventStream)
        }
    }

    // What the hub asks with every sample while a POLL waits (MotionPipeline.snapshot(for:)): the
    // snapshot of its streams, of which one (tilt) has no value yet, so there is none. Allocates
    // nothing (mallocCountTotal 0; building the snapshot first and giving it up took 1).
    Benchmark("SNAPSHOT: a waiting poll's look, one stream without a value") { benchmark in
        let streams: [StreamKind] = [.accelerometer, .tilt]
        let accelerometer = AnyServerMessage.accelerometer(AccelerometerMessage(timestamp: 5_010_000_000, acceleration: Vector3(x: 0, y: -1, z: 0)))
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(Snapshot(id: .integer(1), streams: streams) { $0 == .accelerometer ? accelerometer : nil })
        }
    }

    Benchmark("MOTION line: JSONEncoder (Wire.encode)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try Wire.encode(motion).count)
        }
    }
}
