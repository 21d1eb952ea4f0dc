import Foundation
import MotionDevices
import TestSupport
import Testing

@testable import MotionDaemon

extension Hardware {
    /// Ambient light, read from IIO illuminance channels. The kernel's IIO ABI
    /// (Documentation/ABI/testing/sysfs-bus-iio, `in_illuminance_raw`): "units after application of
    /// scale and offset are lux"; a driver without a scale gives counts, iio-sensor-proxy's "vendor" unit.
    /// Here: the device layer reads each so; the light stream's rules are the hub's (MotionHubTests'
    /// AmbientLightTests).
    @Suite struct AmbientLight {
        @Test func lightIsInLuxWhereTheDriverGivesAScaleAndInVendorUnitsWhereNot() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "ambient-light")
            let devices = try DeviceDiscovery().listDevices().devices
            #expect(devices.map(\.kinds) == [[.light], [.light]])
            #expect(devices.map { $0.sensors.first?.readsVendorUnits } == [false, true])
        }
    }
}
