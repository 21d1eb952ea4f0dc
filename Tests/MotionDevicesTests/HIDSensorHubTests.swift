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

        /// A hub whose compass reports only its heading (HID usage "Compensated Magnetic North"):
        /// hid-sensor-magn-3d then makes `in_rot_from_north_magnetic_tilt_comp_raw` with the type's
        /// shared `in_rot_scale` and `in_rot_offset`, and no `in_magn_*` channel. Its reading is
        /// (raw + offset) × scale degrees (the IIO ABI; iio-sensor-proxy's drv-iio-buffer-compass
        /// computes raw × scale): 2700 × 0.1 = 270°; a reading of 3600 counts is 360°, north again.
        @Test func theHubsCompassIsReadAsAHeadingInDegrees() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "hid-sensor-hub-compass-light")
            let device = try DeviceDiscovery().describe(DeviceNumber(1))
            #expect(device.kinds == [.compass])
            #expect(device.samplingFrequencyAttribute == "in_rot_sampling_frequency")
            try Self.capturing(device, .compass) { events in
                #expect(abs(events.samples[0].vector.x - 270) < 1e-9, "\(events.samples[0])")
                try testbed.setAttribute("iio:device1", "in_rot_from_north_magnetic_tilt_comp_raw", "3600\n")
                try events.waitUntil { $0.samples.last!.vector.x != 270 }
                #expect(events.samples.last!.vector.x == 0)
            }
        }

        /// hid-sensor-als before Linux 5.12 has no illuminance channel, only `in_intensity_both_raw`
        /// (IIO_INTENSITY, IIO_MOD_LIGHT_BOTH) with the type's `in_intensity_scale`: it is the light
        /// sensor, in lux, as iio-sensor-proxy's drv-iio-buffer-light reads it (level × scale, lux).
        @Test func aHubsLightSensorWithoutIlluminanceIsReadFromItsIntensity() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "hid-sensor-hub-compass-light")
            let device = try DeviceDiscovery().describe(DeviceNumber(2))
            #expect(device.kinds == [.light])
            #expect(device.sensors.first?.readsVendorUnits == false)
            #expect(device.sensors.first?.channels.map(\.id) == ["intensity_both"])
            #expect(device.samplingFrequencyAttribute == "in_intensity_sampling_frequency")
            try Self.capturing(device, .light) { events in
                #expect(abs(events.samples[0].vector.x - 35) < 1e-9, "350 counts × 0.1 lux: \(events.samples[0])")
            }
        }

        /// Captures `kind` of `device` at 10 Hz and gives `body` its events from the first sample on.
        private static func capturing(_ device: DeviceDescriptor, _ kind: SensorKind, _ body: (EventLog) throws -> Void) throws {
            let capture = try SensorCapture(device: device, kinds: [kind], rate: 10)
            let events = EventLog()
            capture.start(handler: events.append)
            defer { capture.stop() }
            try events.waitUntil { $0.samples.count >= 1 }
            try body(events)
        }
    }
}
