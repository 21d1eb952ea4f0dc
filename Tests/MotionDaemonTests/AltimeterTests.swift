import Foundation
import MotionDevices
import TestSupport
import Testing

@testable import MotionDaemon

extension Hardware {
    /// The altimeter on the pressure sensors of four driver families, each as its kernel driver
    /// presents it (Fixtures/pressure-sensors.umockdev): bmp280 and bme680 give `in_pressure_input`
    /// in kPa (IIO_VAL_FRACTIONAL, nine decimals), ms5611 gives it with six (IIO_VAL_INT_PLUS_MICRO,
    /// whole pascals), the lps22hb gives `in_pressure_raw` (24-bit, 4,096 counts per hPa by its
    /// datasheet) and the scale st_pressure_core.c reports, 0.000024414 kPa. Each reading is that of
    /// a tabulated altitude of the ICAO Standard Atmosphere (StandardAtmosphereTests cites the table),
    /// to the sensor's resolution. Here: that the device layer finds each; the altitude each reading
    /// gives, and the altimeter's rules, are the hub's (MotionHubTests' AltimeterTests, on these devices).
    @Suite struct Altimeter {
        @Test func eachDriverFamilysPressureSensorIsFoundAsOne() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "pressure-sensors")
            let devices = try DeviceDiscovery().listDevices().devices
            #expect(devices.map(\.name) == ["bmp280", "bme680", "lps22hb", "ms5611"])
            #expect(devices.allSatisfy { $0.kinds == [.pressure] }, "\(devices.map(\.kinds))")
            // ms5611 buffers pascals beside its processed kPa: read polled, never through the buffer.
            #expect(devices.allSatisfy { $0.captureMode == .polled })
        }
    }
}
