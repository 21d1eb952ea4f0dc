import Foundation
import MotionCore
import TestSupport
import Testing

@testable import MotionDevices

extension Hardware {
    /// The kernel buffer a `ScanBuffer` asks for: at least 100 ms of scans at any rate, while the
    /// watermark (what poll waits for, so the latency) stays the one asked.
    ///
    /// Reference: the kernel's ABI, Documentation/ABI/testing/sysfs-bus-iio (obsolete/ since 5.11,
    /// same text): `buffer/length` is the "number of scans contained by the buffer"; `buffer/watermark`
    /// is the "maximum number of scan elements to wait for. Poll will block until the watermark is
    /// reached". So a reader woken at the watermark and late by 100 ms finds, at f Hz, the watermark's
    /// scans and ⌈0.1 f⌉ more: `length` must hold both, whatever `watermark` is.
    @Suite struct ScanBufferSlack {
        /// (rate offered and asked, Hz; watermark asked; least length: watermark + ⌈0.1 × rate⌉ scans)
        @Test(arguments: [
            (25.0, 1, 1 + 3), (285.714286, 1, 1 + 29), (1000.0, 1, 1 + 100),
            // A client that accepts 100 ms of latency at 285.7 Hz: a watermark of 28 scans (98 ms).
            (285.714286, 28, 28 + 29), (25.0, 2, 2 + 3),
        ])
        func theKernelBufferHoldsAtLeast100msOfScansAndTheWatermarkIsKept(rate: Double, watermark: Int, leastLength: Int) throws {
            let testbed = try Testbed()
            // The buffered IMU's fixture, offering the three rates in question.
            let fixture = try Testbed.fixture("imu-buffered")
                .replacingOccurrences(of: "sampling_frequency_available=25 50 100 200 400 800 1600", with: "sampling_frequency_available=25 285.714286 1000")
            #expect(fixture.contains("25 285.714286 1000"))
            try testbed.add(fixture)
            let imu = try DeviceDiscovery().describe(DeviceNumber(0))
            let buffer = try ScanBuffer(device: imu, kinds: [.accelerometer, .gyroscope], rate: rate, watermark: watermark)
            defer { buffer.close() }
            #expect(buffer.rate == rate)

            let length = try #require(Int(try testbed.attribute("iio:device0", "buffer/length").trimmingCharacters(in: .whitespacesAndNewlines.union(["\0"]))))
            let written = try #require(Int(try testbed.attribute("iio:device0", "buffer/watermark").trimmingCharacters(in: .whitespacesAndNewlines.union(["\0"]))))
            #expect(length >= leastLength, "\(length) scans at \(rate) Hz are \(Double(length) / rate * 1000) ms")
            #expect(Double(length - watermark) / rate >= 0.1, "100 ms of slack after the watermark")
            #expect(written == watermark, "the watermark, and so the latency, is the one asked")
            #expect(length % watermark == 0 && length >= 4 * watermark, "whole refills, at least libiio's four")
            #expect(buffer.length == length)
            #expect(try testbed.attribute("iio:device0", "buffer/enable").hasPrefix("1"))
        }
    }
}
