import Benchmark
import Foundation
import MotionCore
import MotionDevices

// The device layer's per-sample path in release mode: ns per sample and mallocs (must be 0).
// Run: swift package --disable-sandbox benchmark --target MotionDevicesBenchmarks
//
// - polled: three `pread`s of sysfs-style attribute files (in a temp dir), parse, scale, mount matrix;
// - buffered: decode one in-memory IMU scan (accelerometer + gyroscope + timestamp), convert both;
//   the kernel's read of /dev/iio:deviceN is left out (it is a syscall the benchmark can't fake).

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .instructions],
        scalingFactor: .kilo,
        maxDuration: .seconds(3))

    Benchmark("polled read and convert, one 3-axis sample") { benchmark in
        let fixture = try PolledFixture()
        let reader = try PolledReader(device: fixture.device, kinds: [.accelerometer], sysfsRoot: fixture.root)
        var sum = 0.0
        benchmark.startMeasurement()
        for i in benchmark.scaledIterations {
            try reader.read(timestamp: Int64(i)) { sum += $0.vector.z }
        }
        benchmark.stopMeasurement()
        blackHole(sum)
    }

    Benchmark("buffered decode and convert, one IMU scan (2 samples)") { benchmark in
        let fixture = ScanFixture()
        var decoder = try ScanDecoder(
            device: fixture.device,
            layout: [(.accelerometer, [0, 2, 4]), (.gyroscope, [6, 8, 10])],
            timestampOffset: 16)
        var sum = 0.0
        fixture.scan.withUnsafeBytes { scan in
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                decoder.decode(scan: scan.baseAddress!, fallbackTimestamp: 0) { sum += $0.vector.x }
            }
            benchmark.stopMeasurement()
        }
        blackHole(sum)
    }
}

/// A sysfs-style device directory with an accelerometer's raw values, in a temp dir.
struct PolledFixture {
    let root: String
    let device: DeviceDescriptor

    init() throws {
        root = NSTemporaryDirectory() + "motiond-bench-\(getpid())"
        let directory = root + "/bus/iio/devices/iio:device0"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (name, value) in [("in_accel_x_raw", "-123\n"), ("in_accel_y_raw", "456\n"), ("in_accel_z_raw", "16384\n")] {
            try value.write(toFile: "\(directory)/\(name)", atomically: false, encoding: .utf8)
        }
        let channels = Axis.allCases.map { axis in
            ChannelDescriptor(id: "accel_\(axis)", axis: axis, valueAttribute: "in_accel_\(axis)_raw", scale: 0.000598)
        }
        device = DeviceDescriptor(
            number: DeviceNumber(0), name: "bench", syspath: directory,
            sensors: [SensorDescriptor(kind: .accelerometer, channels: channels, mountMatrix: Matrix3(rowMajor: [0, 1, 0, -1, 0, 0, 0, 0, 1]))])
    }
}

/// One BMI160-style scan: 6 × le:s16, 4 bytes padding, le:s64 timestamp.
struct ScanFixture {
    let device: DeviceDescriptor
    let scan: [UInt8]

    init() {
        let s16 = ScanType(isBigEndian: false, isSigned: true, bits: 16, storageBits: 16, shift: 0)
        func sensor(_ kind: SensorKind, _ type: String, scale: Double) -> SensorDescriptor {
            SensorDescriptor(kind: kind, channels: Axis.allCases.map { axis in
                ChannelDescriptor(id: "\(type)_\(axis)", axis: axis, valueAttribute: "in_\(type)_\(axis)_raw", scale: scale, scanIndex: 0, scanType: s16)
            })
        }
        device = DeviceDescriptor(
            number: DeviceNumber(0), name: "bench", syspath: "",
            sensors: [sensor(.accelerometer, "accel", scale: 0.000598), sensor(.gyroscope, "anglvel", scale: 0.001065)],
            timestampScan: TimestampScan(index: 6, scanType: ScanType(isBigEndian: false, isSigned: true, bits: 64, storageBits: 64, shift: 0)))
        var bytes: [UInt8] = []
        for v: Int16 in [12, -34, 16384, 100, -200, 300] { bytes += withUnsafeBytes(of: v.littleEndian, Array.init) }
        bytes += [0, 0, 0, 0] + withUnsafeBytes(of: Int64(123_456_789).littleEndian, Array.init)
        scan = bytes
    }
}
