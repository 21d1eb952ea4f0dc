import Foundation
import MotionConfiguration
import MotionCore
import MotionDevices
import MotionWire
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
    /// to the sensor's resolution.
    @Suite struct Altimeter {
        /// (the fixture's device, the table's altitude in m, the pressure the driver's values mean in kPa).
        static let sensors: [(device: Int, altitude: Double, pressure: Double)] = [
            (0, 2_000, 79.495203125), (1, 500, 95.461), (2, 3_000, 2_871_645 * 0.000024414), (3, 1_000, 89.875),
        ]

        /// The fixture's device `index` alone, as `iio:device0`.
        static func device(_ index: Int) throws -> String {
            let blocks = try Testbed.fixture("pressure-sensors").components(separatedBy: "\n\n")
            return blocks[index].replacingOccurrences(of: #"iio:device\d"#, with: "iio:device0", options: .regularExpression)
        }

        /// Runs `body` with a client watching `altitude` every 50 ms from a daemon on the testbed's
        /// `device` (umockdev's record format).
        static func watchingAltitude(
            on device: String, _ body: (TestClient, Testbed, MotionServer) async throws -> Void
        ) async throws {
            let testbed = try Testbed()
            try testbed.add(device)
            let server = MotionServer(socketPath: NSTemporaryDirectory() + "motiond-altitude-\(getpid()).sock")
            try await server.start()
            try await server.whileServing {
                let client = try TestClient.greeted(path: server.socketPath)
                try client.send(#"{"class":"WATCH","streams":["altitude"],"interval":0.05}"#)
                _ = try client.next("WATCHING")
                try await body(client, testbed, server)
            }
        }

        @Test func eachDriverFamilysPressureSensorIsFoundAsOne() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "pressure-sensors")
            let devices = try DeviceDiscovery().listDevices().devices
            #expect(devices.map(\.name) == ["bmp280", "bme680", "lps22hb", "ms5611"])
            #expect(devices.allSatisfy { $0.kinds == [.pressure] }, "\(devices.map(\.kinds))")
            // ms5611 buffers pascals beside its processed kPa: read polled, never through the buffer.
            #expect(devices.allSatisfy { $0.captureMode == .polled })
        }

        @Test(arguments: sensors)
        func theAltitudeIsTheStandardAtmospheresWithinATenthOfAMetre(sensor: (device: Int, altitude: Double, pressure: Double)) async throws {
            try await Self.watchingAltitude(on: Self.device(sensor.device)) { client, _, _ in
                let first = try client.decode(AltitudeMessage.self, try client.next("ALTITUDE"))
                #expect(abs(first.pressure - sensor.pressure) < 1e-6, "\(first)")  // 9 significant digits on the wire
                #expect(abs(first.altitude - sensor.altitude) < 0.1, "\(first.altitude) m, the table \(sensor.altitude) m")
                // The readings do not move: after three, the noise is measured as none.
                var later = first
                while later.precision == nil { later = try client.decode(AltitudeMessage.self, try client.next("ALTITUDE")) }
                #expect(later.precision == 0)
                try client.send(#"{"class":"POLL","streams":["altitude"]}"#)
                let polled = try #require(try client.decode(Snapshot.self, try client.next("SNAPSHOT")).altitude)
                #expect(abs(polled.altitude - sensor.altitude) < 0.1)
            }
        }

        /// Climbing a floor shows in the stream: 36 Pa less at 1,000 m is 3.30 m by the hydrostatic
        /// equation, Δh = Δp / (ρ g), with the ICAO table's density there (1.1117 kg/m³: 10.90 Pa/m). A
        /// reload with the day's sea-level pressure moves the absolute altitude, not the reading.
        @Test func aClimbAndANewSeaLevelPressureShowInTheStream() async throws {
            try await Self.watchingAltitude(on: Self.device(3)) { client, testbed, server in
                let ground = try client.decode(AltitudeMessage.self, try client.next("ALTITUDE"))
                try testbed.setAttribute("iio:device0", "in_pressure_input", "89.839000\n")
                var upstairs = ground
                while upstairs.pressure == ground.pressure { upstairs = try client.decode(AltitudeMessage.self, try client.next("ALTITUDE")) }
                #expect(abs(upstairs.altitude - ground.altitude - 3.30) < 0.02, "\(upstairs.altitude - ground.altitude) m")

                var settings = Configuration()
                settings.seaLevelPressure = 102.325  // 10 hPa above the standard: about 81 m higher
                server.apply(settings)
                var reloaded = upstairs
                while reloaded.altitude - upstairs.altitude < 1 { reloaded = try client.decode(AltitudeMessage.self, try client.next("ALTITUDE")) }
                let expected = try #require(StandardAtmosphere.altitude(pressure: 89.839, seaLevelPressure: 102.325))
                #expect(abs(reloaded.altitude - expected) < 1e-3 && (78...84).contains(reloaded.altitude - upstairs.altitude), "\(reloaded)")
                #expect(reloaded.pressure == upstairs.pressure)
            }
        }

        /// A driver's garbage (a negative pressure, a bus error's huge value) is dropped, not turned
        /// into an altitude; the next good reading is served.
        @Test func aNegativeOrAbsurdPressureIsDropped() async throws {
            let negative = try Self.device(3).replacingOccurrences(of: "in_pressure_input=89.875000", with: "in_pressure_input=-89.875000")
            try await Self.watchingAltitude(on: negative) { client, testbed, _ in
                // Each bad value is read by a poll before the next is written, or the test says nothing of it.
                try testbed.waitForReads(of: "in_pressure_input", on: "iio:device0")
                try testbed.setAttribute("iio:device0", "in_pressure_input", "2147483.647000\n")
                try testbed.waitForReads(of: "in_pressure_input", on: "iio:device0")
                try testbed.setAttribute("iio:device0", "in_pressure_input", "89.875000\n")
                let first = try client.decode(AltitudeMessage.self, try client.next("ALTITUDE"))
                #expect(first.pressure == 89.875, "the first reading served is the first good one: \(first)")
            }
        }

        /// Issue 40, defect 5: one raw count of the lps22hb (2.4e-5 kPa, its datasheet's 4,096 counts per
        /// hPa) read between good ones was served as 98 km, and its jump as 3.5 km of noise. A pressure
        /// no barometer measures is no altitude, and leaves the precision as it was.
        @Test func aGlitchOfOneRawCountIsNoAltitudeAndNoNoise() async throws {
            try await Self.watchingAltitude(on: Self.device(2)) { client, testbed, _ in
                var reading = try client.decode(AltitudeMessage.self, try client.next("ALTITUDE"))
                while reading.precision == nil { reading = try client.decode(AltitudeMessage.self, try client.next("ALTITUDE")) }
                try testbed.setAttribute("iio:device0", "in_pressure_raw", "1\n")
                try testbed.waitForReads(of: "in_pressure_raw", on: "iio:device0")  // a reading or more of the glitch
                try testbed.setAttribute("iio:device0", "in_pressure_raw", "2871600\n")  // 45 counts less: 0.1 m higher
                var served: [AltitudeMessage] = []
                while served.last.map({ abs($0.pressure - 2_871_600 * 0.000024414) > 1e-6 }) ?? true {
                    served.append(try client.decode(AltitudeMessage.self, try client.next("ALTITUDE")))
                }
                for message in served {
                    #expect(abs(message.altitude - 3_000) < 1, "\(message)")
                    #expect((message.precision ?? 0) < 0.5, "\(message)")
                }
            }
        }
    }
}
