import CLibIIO
import Foundation
import MotionCore
import Synchronization
import TestSupport
import MotionSystem
import Testing

@testable import MotionDevices

extension Hardware {
    /// Buffered capture from scripted `/dev/iio:deviceN` bytes.
    @Suite struct BufferedCapture {
        @Test func imuScansAreDecodedWithTheirHardwareTimestamps() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "imu-buffered")
            let imu = try DeviceDiscovery().describe(DeviceNumber(0))
            let capture = try SensorCapture(device: imu, kinds: [.accelerometer, .gyroscope], rate: 90)
            #expect(capture.rate == 100, "the lowest offered rate ≥ 90 Hz")
            let events = EventLog()
            capture.start(handler: events.append)
            try events.waitUntil { _ in (try? testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("1") == true }

            // The kernel sets the clock we asked for, enables the trigger and the scan elements.
            #expect(try testbed.attribute("iio:device0", "current_timestamp_clock") == "monotonic\n")
            #expect(try testbed.attribute("iio:device0", "trigger/current_trigger") == "bmi160-dev0\n")
            #expect(try testbed.attribute("iio:device0", "sampling_frequency") == "100\n")
            #expect(try testbed.attribute("iio:device0", "scan_elements/in_anglvel_z_en").hasPrefix("1"))

            // Scan: 6 × s16 (12 bytes), 4 bytes padding to align the s64 timestamp, then the timestamp.
            var bytes: [UInt8] = []
            for (values, time) in [([1, -2, 16384, 100, -100, 0], Int64(1_000_000_000)), ([0, 0, -16384, 0, 0, 32767], 1_010_000_000)] {
                for v in values { bytes += le16(v) }
                bytes += [0, 0, 0, 0]
                bytes += withUnsafeBytes(of: time.littleEndian, Array.init)
            }
            try testbed.feed("/dev/iio:device0", bytes)
            try events.waitUntil { $0.samples.count >= 4 }
            capture.stop()

            let samples = events.samples
            #expect(samples.map(\.kind) == [.accelerometer, .gyroscope, .accelerometer, .gyroscope])
            #expect(samples.map(\.timestamp) == [1_000_000_000, 1_000_000_000, 1_010_000_000, 1_010_000_000])
            // Then into the device frame: a half turn about z, x and y negated (docs/frames.md).
            expectClose(samples[0].vector, Vector3(x: -0.000598, y: 0.001196, z: 9.797632))
            // Then into the device frame: a half turn about z, x and y negated (docs/frames.md).
            expectClose(samples[1].vector, Vector3(x: -0.1065, y: 0.1065, z: 0))
            expectClose(samples[2].vector, Vector3(x: 0, y: 0, z: -9.797632))
            expectClose(samples[3].vector, Vector3(x: 0, y: 0, z: 34.896855))
            #expect(capture.mode == .buffered)

            // Closing put back what the capture changed.
            #expect(try testbed.attribute("iio:device0", "buffer/enable").hasPrefix("0"))
            #expect(try testbed.attribute("iio:device0", "scan_elements/in_accel_x_en").hasPrefix("0"))
            #expect(try testbed.attribute("iio:device0", "current_timestamp_clock") == "realtime\n")
            #expect(try testbed.attribute("iio:device0", "trigger/current_trigger") == "\n")
            #expect(try testbed.attribute("iio:device0", "sampling_frequency") == "100\n")
        }

        /// A device whose timestamp clock cannot be switched to monotonic (the attribute fails, as
        /// on a driver that rejects the write, or a kernel too old to have it) would give scans on
        /// the wall clock, which jumps when the time is set and lies decades from the polled
        /// sensors' monotonic stamps: its scans are stamped on arrival instead (monotonic), and a
        /// failed switch is said once.
        @Test(arguments: [true, false])
        func scansAreStampedOnArrivalWhenTheirClockCannotBeMadeMonotonic(attributeIsThere: Bool) throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "imu-buffered")
            if attributeIsThere {
                try testbed.breakAttribute("iio:device0", "current_timestamp_clock")
            } else {
                // A kernel without the attribute: its scan timestamps are on the realtime clock.
                try FileManager.default.removeItem(atPath: testbed.root + "/sys/devices/platform/spi-0/spi0.0/iio:device0/current_timestamp_clock")
            }
            let imu = try DeviceDiscovery().describe(DeviceNumber(0))
            let capture = try SensorCapture(device: imu, kinds: [.accelerometer, .gyroscope], rate: 100)
            let events = EventLog()
            capture.start(handler: events.append)
            defer { capture.stop() }
            try events.waitUntil { _ in (try? testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("1") == true }
            #expect(try testbed.attribute("iio:device0", "scan_elements/in_timestamp_en").hasPrefix("0"))

            // Without the timestamp a scan is 6 × s16.
            try testbed.feed("/dev/iio:device0", [0, 0, 16384, 0, 0, 0].flatMap(le16))
            var now = timespec()
            try events.waitUntil { $0.samples.count >= 2 }
            clock_gettime(CLOCK_MONOTONIC, &now)
            let arrival = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
            let stamp = try #require(events.samples.first?.timestamp)
            #expect(stamp <= arrival && arrival - stamp < 1_000_000_000, "stamped on the monotonic clock on arrival: \(stamp) vs \(arrival)")
            let problems = events.all.compactMap { if case .readFailed(let error) = $0 { "\(error)" } else { nil } }
            if attributeIsThere {
                #expect(problems.count == 1 && problems[0].contains("current_timestamp_clock"), "\(problems)")
            }
            #expect(capture.mode == .buffered)
        }

        /// Each scan layout (byte order, sign, bits, shift, 8/16/32-bit storage) decoded by motiond
        /// and, as an independent reference, by libiio's own `iio_channel_convert`.
        @Test func everyScanTypeDecodesAsLibiioDecodesIt() throws {
            let types = [
                "le:s16/16>>0", "be:s16/16>>0", "le:u12/16>>4", "be:s12/16>>4",
                "le:s32/32>>0", "be:u24/32>>8", "le:s8/8>>0", "be:u16/16>>0", "le:s20/32>>0",
            ]
            let testbed = try Testbed()
            var description = "P: /devices/platform/fmt/iio:device0\nN: iio:device0\nE: SUBSYSTEM=iio\nA: dev=250:0\nA: name=formats\\n\n"
            for (i, type) in types.enumerated() {
                description += "A: in_voltage\(i)_raw=0\\n\nA: scan_elements/in_voltage\(i)_en=0\\n\n"
                description += "A: scan_elements/in_voltage\(i)_index=\(i)\\n\nA: scan_elements/in_voltage\(i)_type=\(type)\\n\n"
            }
            try testbed.add(description + "A: buffer/enable=0\\n\nA: buffer/length=0\\n\n\n")
            let context = try IIOContext()
            let device = try #require(context.device(sysname: "iio:device0"))
            var generator = SystemRandomNumberGenerator()
            var checked = 0
            for channel in device.channels where channel.isScanElement {
                let text = try Sysfs().read(device: "iio:device0", attribute: "scan_elements/in_\(channel.id)_type").get()
                let type = try #require(AttributeParser.scanType(text), "\(text)")
                for _ in 0..<200 {
                    var word = [UInt8](repeating: 0, count: 8)
                    for i in 0..<type.storageBytes { word[i] = UInt8.random(in: 0...255, using: &generator) }
                    var reference: Int64 = 0
                    iio_channel_convert(channel.pointer, &reference, word)
                    let ours = word.withUnsafeBytes { type.decode($0.baseAddress!) }
                    // libiio writes only `storageBytes` of its output: extend its sign the same way.
                    let width = type.storageBits
                    let referenceValue = width == 64 ? reference : (reference << (64 - Int64(width))) >> (64 - Int64(width))
                    let expected = type.isSigned ? referenceValue : reference & ((1 << Int64(width)) - 1)
                    #expect(ours == expected, "\(type) bytes \(word.prefix(type.storageBytes))")
                    checked += 1
                }
            }
            #expect(checked == types.count * 200)
        }

        @Test func littleAndBigEndianSignedUnsignedShiftedChannelsThroughTheBuffer() throws {
            let testbed = try Testbed()
            try testbed.add("""
                P: /devices/platform/mix/iio:device0
                N: iio:device0
                E: SUBSYSTEM=iio
                A: dev=250:0\\n
                A: name=mixed\\n
                A: in_accel_x_raw=0\\n
                A: in_accel_y_raw=0\\n
                A: in_accel_z_raw=0\\n
                A: in_accel_scale=0.01\\n
                A: in_magn_x_raw=0\\n
                A: in_magn_y_raw=0\\n
                A: in_magn_z_raw=0\\n
                A: in_magn_scale=0.00000001\\n
                A: buffer/enable=0\\n
                A: buffer/length=0\\n
                A: scan_elements/in_accel_x_en=0\\n
                A: scan_elements/in_accel_x_index=0\\n
                A: scan_elements/in_accel_x_type=be:s12/16>>4\\n
                A: scan_elements/in_accel_y_en=0\\n
                A: scan_elements/in_accel_y_index=1\\n
                A: scan_elements/in_accel_y_type=le:u16/16>>0\\n
                A: scan_elements/in_accel_z_en=0\\n
                A: scan_elements/in_accel_z_index=2\\n
                A: scan_elements/in_accel_z_type=le:s12/16>>4\\n
                A: scan_elements/in_magn_x_en=0\\n
                A: scan_elements/in_magn_x_index=3\\n
                A: scan_elements/in_magn_x_type=be:s32/32>>0\\n
                A: scan_elements/in_magn_y_en=0\\n
                A: scan_elements/in_magn_y_index=4\\n
                A: scan_elements/in_magn_y_type=le:s24/32>>8\\n
                A: scan_elements/in_magn_z_en=0\\n
                A: scan_elements/in_magn_z_index=5\\n
                A: scan_elements/in_magn_z_type=le:u32/32>>0\\n


                """)
            let device = try DeviceDiscovery().describe(DeviceNumber(0))
            #expect(device.captureMode == .buffered)
            #expect(device.timestampScan == nil)
            let capture = try SensorCapture(device: device, kinds: [.accelerometer, .magnetometer], rate: 50)
            let events = EventLog()
            capture.start(handler: events.append)
            try events.waitUntil { _ in (try? testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("1") == true }
            // Scales chosen so every value stays within what a real sensor reads (beyond, it is dropped).
            // accel: x = -3 as be s12 in the top bits, y = 65535 unsigned, z = -2048 le s12 in the top bits;
            // 2 bytes padding to align the 32-bit magn channels;
            // magn: x = -100000 be s32, y = -5 as le s24 above 8 low bits, z = 4_000_000_000 le u32.
            var scan: [UInt8] = [0xFF, 0xD0, 0xFF, 0xFF, 0x00, 0x80, 0, 0]
            scan += withUnsafeBytes(of: Int32(-100_000).bigEndian, Array.init)
            scan += withUnsafeBytes(of: (UInt32(bitPattern: -5) << 8 | 0xAB).littleEndian, Array.init)
            scan += withUnsafeBytes(of: UInt32(4_000_000_000).littleEndian, Array.init)
            let before = Syscall.monotonicNanoseconds()
            try testbed.feed("/dev/iio:device0", scan)
            try events.waitUntil { $0.samples.count >= 2 }
            capture.stop()
            let samples = events.samples
            // Then into the device frame: a half turn about z, x and y negated (docs/frames.md).
            expectClose(samples[0].vector, Vector3(x: 0.03, y: -655.35, z: -20.48))
            // Then into the device frame: a half turn about z, x and y negated (docs/frames.md).
            expectClose(samples[1].vector, Vector3(x: 0.1, y: 0.000005, z: 4000))  // × 1e-8 G × 100 µT/G
            // No timestamp channel: stamped with CLOCK_MONOTONIC on arrival.
            #expect(samples[0].timestamp >= before && samples[0].timestamp <= Syscall.monotonicNanoseconds())
        }

        @Test func fallsBackToPolledWhenNoScanArrivesInTime() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "imu-buffered")
            let imu = try DeviceDiscovery().describe(DeviceNumber(0))
            let capture = try SensorCapture(device: imu, kinds: [.accelerometer], rate: 200, firstDataTimeout: 0.2)
            let events = EventLog()
            capture.start(handler: events.append)
            try events.waitUntil { $0.samples.count >= 3 }
            capture.stop()
            #expect(capture.mode == .polled)
            let change = events.all.first { if case .captureModeChanged = $0 { true } else { false } }
            guard case .captureModeChanged(.polled, .bufferFailed(_, "refill", let code)) = change else {
                Issue.record("expected a switch to polled after a refill timeout, got \(String(describing: change))")
                return
            }
            #expect(code == ErrnoValue.timedOut)
            expectClose(events.samples[0].vector, Vector3(x: 0, y: 0, z: 9.797632))
            #expect(try testbed.attribute("iio:device0", "buffer/enable").hasPrefix("0"))
        }
    }
}

func le16(_ v: Int) -> [UInt8] {
    withUnsafeBytes(of: Int16(v).littleEndian, Array.init)
}

/// Collects a capture's events from its thread, for a test to wait on.
final class EventLog: Sendable {
    private let events = Mutex<[SensorEvent]>([])

    var all: [SensorEvent] { events.withLock { $0 } }

    var samples: [SensorSample] {
        all.compactMap { if case .sample(let s) = $0 { s } else { nil } }
    }

    @Sendable func append(_ event: SensorEvent) { events.withLock { $0.append(event) } }

    /// Polls `condition` every millisecond for at most `seconds`; fails the test on timeout.
    func waitUntil(seconds: Double = 5, _ condition: (EventLog) -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition(self) {
            guard Date() < deadline else { throw TestbedError("timed out; last events: \(all.suffix(4))") }
            usleep(1000)
        }
    }
}
