import Foundation
import MotionCore
import TestSupport
import Testing

@testable import MotionDevices

extension Hardware {
    /// What HID sensor hubs (`hid-sensor-accel-3d` and its siblings) need beyond a plain IIO device.
    @Suite struct HIDSensorHub {
        /// A hub sends a report only when the value moves by more than `in_accel_hysteresis` (the
        /// HID usage "Change Sensitivity Absolute", which the kernel's hid-sensor-trigger exposes):
        /// the laptop fixture's 20 counts would keep a lid at rest silent. While captured, the
        /// threshold is 0; afterwards it is what it was.
        @Test func theHysteresisIsZeroWhileCapturedAndRestoredAfter() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "laptop-hid-accelerometer")
            let device = try DeviceDiscovery().describe(DeviceNumber(0))
            let capture = try SensorCapture(device: device, kinds: [.accelerometer], rate: 10)
            let events = EventLog()
            capture.start(handler: events.append)
            try events.waitUntil { $0.samples.count >= 1 }
            #expect(try testbed.attribute("iio:device0", "in_accel_hysteresis") == "0\n")
            capture.stop()
            #expect(try testbed.attribute("iio:device0", "in_accel_hysteresis") == "20\n")
        }
    }
}
