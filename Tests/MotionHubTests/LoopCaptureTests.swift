import Foundation
import MotionCore
import MotionDevices
import NIOCore
import NIOPosix
import Synchronization
import TestSupport
import Testing

@testable import MotionHub

extension Hardware {
    /// A capture read on an event loop, without the hub: what it tells its handler.
    @Suite struct LoopCaptureTests {
        /// Collects a capture's events, for a test to wait on.
        final class Events: Sendable {
            private let events = Mutex<[SensorEvent]>([])
            func take(_ event: SensorEvent) { events.withLock { $0.append(event) } }
            var samples: Int { events.withLock { $0.filter(\.isSample).count } }
            var modeChanges: [CaptureMode] {
                events.withLock { events in events.compactMap { if case .captureModeChanged(let mode, _) = $0 { mode } else { nil } } }
            }
            var lastSample: SensorSample? {
                events.withLock { events in events.reversed().lazy.compactMap { if case .sample(let s) = $0 { s } else { nil } }.first }
            }
            var rearms: [SensorEvent] {
                events.withLock { events in events.filter { if case .rearming = $0 { true } else { false } } }
            }
            var ended: DeviceError? {
                events.withLock { events in
                    for case .ended(let error) in events { return error }
                    return nil
                }
            }
        }

        /// A buffer that gives no scan in time is given up for polling, as the buffered `SensorCapture`
        /// does: at 100 Hz on a thread of its own, at the event streams' 4 Hz from a timer on the loop.
        /// The polled values are the fixture's sysfs ones (accelerometer z raw 16384 × 0.000598 m/s²).
        @Test(arguments: [100.0, CapturePlan.eventRate])
        func aBufferWithoutScansFallsBackToPolling(rate: Double) throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "imu-buffered")
            let device = try #require(try DeviceDiscovery().listDevices().devices.first)
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            defer { try? group.syncShutdownGracefully() }
            let capture = LoopCapture(
                device: device, kinds: [.accelerometer], rate: rate, latency: 0, eventLoop: group.next(), firstDataTimeout: 0.3)
            let events = Events()
            capture.start { events.take($0) }
            defer { capture.stop() }
            try waitUntil { events.modeChanges == [.polled] && events.samples >= 2 }
            #expect(capture.readingMode == .polled)
            let z = try #require(events.lastSample?.vector.z)
            #expect(abs(z - 16384 * 0.000598) < 1e-9)
        }

        /// A device that lists only rates no chip runs at (`PlausibleRate.hertz`) is read at the rate
        /// asked for: from a buffer that gives nothing it falls back to polling, on the loop at the
        /// event streams' rate (1e-10 Hz trapped converting the buffer check's delay, and the timer's
        /// period once resting), on a thread at 100 Hz (1e308 Hz trapped in `SensorCapture.init`).
        @Test(arguments: [("1e-10", CapturePlan.eventRate, false), ("1e-10", CapturePlan.eventRate, true), ("1e-9", CapturePlan.eventRate, true), ("1e308", 100, false)])
        func aDeviceListingOnlyRatesNoChipRunsAtIsReadAtTheRateAskedFor(available: String, rate: Double, restsWhenStill: Bool) throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "imu-buffered")
            try testbed.setAttribute("iio:device0", "sampling_frequency_available", "\(available)\n")
            let device = try #require(try DeviceDiscovery().listDevices().devices.first)
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            defer { try? group.syncShutdownGracefully() }
            let capture = LoopCapture(
                device: device, kinds: [.accelerometer], rate: rate, latency: 0, eventLoop: group.next(), firstDataTimeout: 0.3,
                restsWhenStill: restsWhenStill)
            #expect(capture.rate == rate)
            let events = Events()
            capture.start { events.take($0) }
            defer { capture.stop() }
            try waitUntil { events.samples >= 2 }
            #expect(capture.readingMode == .polled)
        }

        /// A capture on `loop` of the fixture IMU's accelerometer (its rate 100 Hz in sysfs), polled from
        /// the start at 200 Hz: faster than the loop polls, so on a thread of the capture's.
        static func fastPolledCapture(_ testbed: Testbed, on loop: any EventLoop) throws -> LoopCapture {
            try testbed.add(fixture: "imu-buffered")
            var device = try #require(try DeviceDiscovery().listDevices().devices.first)
            device.captureMode = .polled
            return LoopCapture(device: device, kinds: [.accelerometer], rate: 200, latency: 0, eventLoop: loop)
        }

        /// The imu-buffered fixture's accelerometer and gyroscope read through its buffer at 100 Hz on
        /// `loop`, once its first scan (two samples) has reached the handler.
        static func streamingIMU(_ testbed: Testbed, on loop: any EventLoop) throws -> (LoopCapture, Events) {
            try testbed.add(fixture: "imu-buffered")
            let device = try #require(try DeviceDiscovery().listDevices().devices.first)
            let capture = LoopCapture(device: device, kinds: [.accelerometer, .gyroscope], rate: 100, latency: 0, eventLoop: loop)
            let events = Events()
            capture.start { events.take($0) }
            try waitUntil { (try? testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("1") == true }
            try testbed.feed("/dev/iio:device0", Testbed.imuScan(accelerometer: [0, 0, 16384], gyroscope: [0, 0, 0], time: 1_000_000))
            try waitUntil { events.samples == 2 }
            return (capture, events)
        }

        /// A device polled from the start faster than the loop polls (`CapturePlan.eventRate`) is read
        /// on a thread of the capture's (`ThreadPoller`), under its one lifecycle: the samples come
        /// from that thread, at the fixture's sysfs values, and the stop puts the rate it set back.
        @Test func aDevicePolledFastIsReadOnAThreadOfTheCaptures() throws {
            let testbed = try Testbed()
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            defer { try? group.syncShutdownGracefully() }
            let loop = group.next()
            let capture = try Self.fastPolledCapture(testbed, on: loop)
            let events = Events()
            let onLoop = Mutex(false)
            capture.start { event in
                if loop.inEventLoop { onLoop.withLock { $0 = true } }
                events.take(event)
            }
            try waitUntil { events.samples >= 5 }
            #expect(try testbed.attribute("iio:device0", "sampling_frequency").hasPrefix("200"))
            capture.stop()
            #expect(capture.readingMode == .polled && events.modeChanges.isEmpty && events.ended == nil)
            #expect(!onLoop.withLock { $0 }, "read on the capture's thread, not the loop")
            #expect(abs((events.lastSample?.vector.z ?? 0) - 16384 * 0.000598) < 1e-9)
            #expect(try testbed.attribute("iio:device0", "sampling_frequency").hasPrefix("100"))
        }

        /// A fast-polled sensor whose reads keep failing is re-armed on its own thread again and again
        /// (issue 62): each re-arm ends that polling thread by itself, and the capture keeps for its
        /// stop only those not yet ended, not one thread and eventfd per re-arm (a dead sensor is
        /// re-armed every minute for as long as the daemon runs).
        @Test func reArmsOfAFastPolledSensorKeepNoEndedThread() throws {
            let testbed = try Testbed()
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            defer { try? group.syncShutdownGracefully() }
            let capture = try Self.fastPolledCapture(testbed, on: group.next())
            try testbed.setAttribute("iio:device0", "in_accel_z_raw", "garbage\n")
            let events = Events()
            capture.start { events.take($0) }
            defer { capture.stop() }
            // Re-arms at 0, 1 and 2 s: the fourth comes about 3 s after the first.
            try waitUntil(seconds: 8) { events.rearms.count >= 4 }
            #expect(capture.pollersEnding <= 2, "\(capture.pollersEnding) polling threads kept after \(events.rearms.count) re-arms")
            #expect(events.ended == nil)
        }

        /// A capture let go without a stop ends its polling thread, which puts the device back: the
        /// thread holds the capture one round at a time, not for its life (`ThreadPoller`).
        @Test func aCaptureLetGoWithoutAStopEndsItsPollingThread() throws {
            let testbed = try Testbed()
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            defer { try? group.syncShutdownGracefully() }
            var capture: LoopCapture? = try Self.fastPolledCapture(testbed, on: group.next())
            let events = Events()
            capture?.start { events.take($0) }
            try waitUntil { events.samples >= 5 }
            #expect(try testbed.attribute("iio:device0", "sampling_frequency").hasPrefix("200"))
            capture = nil
            try waitUntil { (try? testbed.attribute("iio:device0", "sampling_frequency"))?.hasPrefix("100") == true }
        }

        /// Issue 62: a buffer that falls silent mid-stream while its device is there (a driver that
        /// forgot its chip's state, as the bmi260/bmi270 reports in sleep-and-recovery.md) is re-armed
        /// after a silence check (before: waited for until the daemon restarted): the buffer disabled
        /// and enabled again, as at start. The fixture's "driver" here gives scans again only once
        /// `buffer/enable` was written 0 then 1 after the silence, as such a chip does; the first scan
        /// after it reaches the handler within 2 s of the re-arm.
        @Test func aBufferThatFallsSilentMidStreamIsReArmedAndReadsAgain() throws {
            let testbed = try Testbed()
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            defer { try? group.syncShutdownGracefully() }
            let (capture, events) = try Self.streamingIMU(testbed, on: group.next())
            defer { capture.stop() }
            // Silent from here: no scan until the buffer is enabled afresh. Its writes are counted from
            // now (inotify's IN_CLOSE_WRITE on the testbed's file): a re-arm writes 0, then 1.
            let writes = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            defer { close(writes) }
            #expect(inotify_add_watch(writes, testbed.root + "/sys/bus/iio/devices/iio:device0/buffer/enable", UInt32(IN_CLOSE_WRITE)) >= 0)
            func enableWrites() -> Int {
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = read(writes, &buffer, buffer.count)
                return count > 0 ? count / MemoryLayout<inotify_event>.size : 0
            }
            try waitUntil(seconds: 2 * CapturePolicy.silenceCheck + 2) { !events.rearms.isEmpty }
            let rearmed = Date()
            guard case .rearming(.silence, attempt: 1, after: 0) = events.rearms.first else {
                Issue.record("re-armed as \(events.rearms)")
                return
            }
            var written = 0
            try waitUntil(seconds: 2) {
                written += enableWrites()
                return written >= 2 && (try? testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("1") == true
            }
            try testbed.feed("/dev/iio:device0", Testbed.imuScan(accelerometer: [0, 0, 16384], gyroscope: [0, 0, 0], time: 2_000_000))
            try waitUntil(seconds: 2) { events.samples == 4 }
            let took = Date().timeIntervalSince(rearmed)
            print("silent buffer: reads again \(took) s after its re-arm")
            #expect(took < 2)
            #expect(events.ended == nil && capture.readingMode == .buffered)
        }

        /// A removed device's buffer need not fail a read: under umockdev, as with some drivers, it
        /// only falls silent. The capture then notices by itself that the device is gone (within two
        /// of its silence checks, `CapturePolicy.silenceCheck`), without waiting for udev's listing.
        @Test func aBufferThatFallsSilentBecauseItsDeviceWentEndsAsVanished() throws {
            let testbed = try Testbed()
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            defer { try? group.syncShutdownGracefully() }
            let (capture, events) = try Self.streamingIMU(testbed, on: group.next())
            defer { capture.stop() }
            testbed.remove(syspath: "/sys/devices/platform/spi-0/spi0.0/iio:device0")
            try waitUntil(seconds: 2 * CapturePolicy.silenceCheck + 1) { events.ended != nil }
            guard case .deviceVanished(let name) = events.ended else { Issue.record("ended with \(String(describing: events.ended))"); return }
            #expect(name == "iio:device0")
        }
    }
}
