import Foundation
import MotionCore
import TestSupport
import Synchronization
import Testing

@testable import MotionDevices

extension Hardware {
    /// Devices that come and go while the device layer runs.
    @Suite struct HotPlug {
        @Test func monitorReportsAddAndRemoveOfIIODevicesOnly() throws {
            let testbed = try Testbed()
            let monitor = try DeviceMonitor()
            try testbed.add(fixture: "imu-buffered")  // iio:device0 and its trigger
            let added = try #require(try monitor.nextChange(timeoutMilliseconds: 2000))
            #expect(added.action == .added)
            #expect(added.device == DeviceNumber(0))
            #expect(added.syspath == "/sys/devices/platform/spi-0/spi0.0/iio:device0")
            testbed.remove(syspath: added.syspath)
            let removed = try #require(try monitor.nextChange(timeoutMilliseconds: 2000))
            #expect(removed.action == .removed)
            #expect(removed.device == DeviceNumber(0))
            #expect(try monitor.nextChange(timeoutMilliseconds: 100) == nil, "the trigger's events are not reported")
        }

        /// A capture whose device goes away ends by itself, and its owner drops it without `stop()`
        /// (the usual path: the read fails before udev's remove arrives). Its thread used to stay
        /// unjoined and keep the capture, with its two wake-pipe descriptors, alive for ever:
        /// 2,000 unplug/replug cycles took the daemon from 38 to 138 descriptors and 863 to 1,330 MB
        /// of address space. Now descriptors and threads stay flat.
        @Test func capturesThatEndBecauseTheirDeviceWentAwayLeaveNothingBehind() throws {
            let testbed = try Testbed()
            let description = """
                P: /devices/platform/i2c-1/1-0018/iio:device0
                E: SUBSYSTEM=iio
                A: name=bma250e\\n
                A: in_accel_x_raw=10\\n
                A: in_accel_y_raw=-20\\n
                A: in_accel_z_raw=256\\n
                A: in_accel_scale=0.038307\\n


                """
            func count(_ directory: String) -> Int { (try? FileManager.default.contentsOfDirectory(atPath: directory).count) ?? -1 }
            func cycle() throws {
                try testbed.add(description)
                let device = try DeviceDiscovery().describe(DeviceNumber(0))
                let capture = try SensorCapture(device: device, kinds: [.accelerometer], rate: 125)
                let events = EventLog()
                capture.start(handler: events.append)
                try events.waitUntil { $0.samples.count >= 1 }
                testbed.remove(syspath: "/sys/devices/platform/i2c-1/1-0018/iio:device0")
                try events.waitUntil { log in log.all.contains { if case .ended = $0 { true } else { false } } }
            }
            for _ in 0..<5 { try cycle() }  // warm up: first-use allocations, libudev, libiio
            usleep(100_000)  // stays: the warm-up's threads end unjoined, and no count says when they all have
            let (fds, threads) = (count("/proc/self/fd"), count("/proc/self/task"))
            for _ in 0..<50 { try cycle() }
            // The last threads return (or the wait ends, and the counts say what stayed).
            _ = try? waitUntil(seconds: 2) { count("/proc/self/fd") <= fds + 2 && count("/proc/self/task") <= threads + 2 }
            #expect(count("/proc/self/fd") <= fds + 2, "descriptors: \(fds) before, \(count("/proc/self/fd")) after 50 cycles")
            #expect(count("/proc/self/task") <= threads + 2, "threads: \(threads) before, \(count("/proc/self/task")) after")
        }

        @Test func startDeliversChangesAndStopEndsTheThread() throws {
            let testbed = try Testbed()
            let monitor = try DeviceMonitor()
            let seen = Mutex<[DeviceChange]>([])
            #expect(monitor.start { result in if case .success(let change) = result { seen.withLock { $0.append(change) } } } == nil)
            func device(_ n: Int) -> String {
                "P: /devices/platform/usb/iio:device\(n)\nE: SUBSYSTEM=iio\nA: name=hotplugged\\n\nA: in_anglvel_x_raw=1\\n\n\n"
            }
            try testbed.add(device(5))
            _ = try? waitUntil(seconds: 2) { !seen.withLock { $0.isEmpty } }
            #expect(seen.withLock { $0.map(\.device) } == [DeviceNumber(5)], "the change came through the handler")

            // stop() wakes and joins the thread; on another thread, so that a regression fails here
            // instead of hanging the run.
            let stopped = DispatchSemaphore(value: 0)
            Thread { monitor.stop(); stopped.signal() }.start()
            #expect(stopped.wait(timeout: .now() + 2) == .success, "stop() returned")
            // A second monitor witnesses the next change: once it has it, the stopped one would too.
            let witness = try DeviceMonitor()
            let witnessed = Mutex<[DeviceChange]>([])
            #expect(witness.start { result in if case .success(let change) = result { witnessed.withLock { $0.append(change) } } } == nil)
            defer { witness.stop() }
            try testbed.add(device(6))
            _ = try? waitUntil(seconds: 2) { !witnessed.withLock { $0.isEmpty } }
            #expect(witnessed.withLock { $0.map(\.device) } == [DeviceNumber(6)])
            #expect(seen.withLock { $0.count } == 1, "nothing is reported after stop()")
        }

        @Test func aDeviceAddedWhileAnotherIsReadIsPickedUpAndARemovedOneEndsItsCapture() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "phone")
            let monitor = try DeviceMonitor()
            let accelerometer = try DeviceDiscovery().describe(DeviceNumber(0))
            let capture = try SensorCapture(device: accelerometer, kinds: [.accelerometer], rate: 125)
            let events = EventLog()
            capture.start(handler: events.append)
            try events.waitUntil { $0.samples.count >= 3 }

            try testbed.add("""
                P: /devices/platform/usb/iio:device7
                E: SUBSYSTEM=iio
                A: name=hotplugged\\n
                A: in_anglvel_x_raw=1\\n
                A: in_anglvel_y_raw=2\\n
                A: in_anglvel_z_raw=3\\n
                A: in_anglvel_scale=0.5\\n


                """)
            let added = try #require(try monitor.nextChange(timeoutMilliseconds: 2000))
            #expect(added.action == .added && added.device == DeviceNumber(7))
            let newcomer = try DeviceDiscovery().describe(added.device)
            // Then into the device frame: a half turn about z, x and y negated (docs/frames.md).
            expectClose(try readOnce(newcomer, .gyroscope), Vector3(x: -0.5, y: -1, z: 1.5))

            testbed.remove(syspath: accelerometer.syspath)
            try events.waitUntil { log in log.all.contains { if case .ended = $0 { true } else { false } } }
            guard case .ended(.deviceVanished("iio:device0")) = events.all.last else {
                Issue.record("expected the capture to end with deviceVanished, got \(String(describing: events.all.last))")
                return
            }
            let removed = try #require(try monitor.nextChange(timeoutMilliseconds: 2000))
            #expect(removed.action == .removed && removed.device == DeviceNumber(0))
            capture.stop()  // already ended: stop is harmless
            #expect(try DeviceDiscovery().listDevices().devices.map(\.number.rawValue) == [1, 2, 3, 7])
        }

        @Test func aBufferedDeviceRemovedMidStreamEndsItsCaptureCleanly() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "imu-buffered")
            let imu = try DeviceDiscovery().describe(DeviceNumber(0))
            let capture = try SensorCapture(device: imu, kinds: [.gyroscope], rate: 100, firstDataTimeout: 0.3)
            let events = EventLog()
            capture.start(handler: events.append)
            try events.waitUntil { _ in (try? testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("1") == true }
            // Only the enabled channels are in a scan: 3 × s16, 2 bytes padding, the s64 timestamp.
            var scan: [UInt8] = []
            for v in [10, 20, 30] { scan += le16(v) }
            scan += [0, 0] + withUnsafeBytes(of: Int64(5).littleEndian, Array.init)
            try testbed.feed("/dev/iio:device0", scan)
            try events.waitUntil { $0.samples.count == 1 }
            testbed.remove(syspath: imu.syspath)
            try events.waitUntil { log in log.all.contains { if case .ended = $0 { true } else { false } } }
            capture.stop()
            guard case .ended(.deviceVanished) = events.all.last else {
                Issue.record("expected deviceVanished, got \(String(describing: events.all.last))")
                return
            }
            #expect(events.samples.map(\.timestamp) == [5])
            // Then into the device frame: a half turn about z, x and y negated (docs/frames.md).
            expectClose(events.samples[0].vector, Vector3(x: -0.01065, y: -0.0213, z: 0.03195))
            #expect(capture.mode == .buffered, "a vanished device is not a reason to poll")
        }
    }
}
