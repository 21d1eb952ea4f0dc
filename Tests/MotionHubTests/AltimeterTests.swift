import HubTestKit
import MotionCore
import MotionDevices
import MotionWire
import NIOCore
import Testing

@testable import MotionHub

/// The altimeter on the pressure sensors of four driver families, each as its kernel driver presents
/// it (Fixtures/pressure-sensors.umockdev, `Machines.barometers`): bmp280 and bme680 give
/// `in_pressure_input` in kPa (IIO_VAL_FRACTIONAL, nine decimals), ms5611 gives it with six
/// (IIO_VAL_INT_PLUS_MICRO, whole pascals), the lps22hb gives `in_pressure_raw` (24-bit, 4,096 counts
/// per hPa by its datasheet) and the scale st_pressure_core.c reports, 0.000024414 kPa. Each reading
/// is that of a tabulated altitude of the ICAO Standard Atmosphere (StandardAtmosphereTests cites
/// the table), to the sensor's resolution. Moved from Hardware.Altimeter, which keeps the discovery
/// of the four.
@Suite struct AltimeterTests {
    /// (the barometer, the table's altitude in m, its counts, the pressure they mean in kPa).
    static let sensors: [(device: Int, altitude: Double, counts: Double, pressure: Double)] = [
        (0, 2_000, 79.495203125, 79.495203125), (1, 500, 95.461, 95.461), (2, 3_000, 2_871_645, 2_871_645 * 0.000024414),
        (3, 1_000, 89.875, 89.875),
    ]

    /// A hub on barometer `index` reading `counts`, with a client watching `altitude` every 50 ms.
    static func watchingAltitude(on index: Int, counts: Double) async throws -> (ScriptedHub, ScriptedHub.Client, Hub.ClientID) {
        let barometer = Machines.barometers[index]
        let scripted = try await ScriptedHub(devices: [barometer])
        scripted.source.counts.withLock { $0[barometer.number] = [.pressure: Vector3(x: counts, y: 0, z: 0)] }
        let (client, id) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["altitude"],"interval":0.05}"#, from: id)
        return (scripted, client, id)
    }

    /// Sets the barometer's counts.
    static func read(_ counts: Double, on scripted: ScriptedHub) {
        scripted.source.counts.withLock { $0[DeviceNumber(0)] = [.pressure: Vector3(x: counts, y: 0, z: 0)] }
    }

    @Test(arguments: sensors)
    func theAltitudeIsTheStandardAtmospheresWithinATenthOfAMetre(sensor: (device: Int, altitude: Double, counts: Double, pressure: Double)) async throws {
        let (scripted, client, id) = try await Self.watchingAltitude(on: sensor.device, counts: sensor.counts)
        #expect(await scripted.advance { !client.altitudes.isEmpty } != nil)
        let first = try #require(client.altitudes.first)
        #expect(abs(first.pressure - sensor.pressure) < 1e-6, "\(first)")
        #expect(abs(first.altitude - sensor.altitude) < 0.1, "\(first.altitude) m, the table \(sensor.altitude) m")
        // The readings do not move: after three, the noise is measured as none.
        #expect(await scripted.advance { client.altitudes.last?.precision != nil } != nil)
        #expect(client.altitudes.last?.precision == 0)
        try await scripted.send(line: #"{"class":"POLL","streams":["altitude"]}"#, from: id)
        let polled = try #require(client.snapshots.last?.altitude)
        #expect(abs(polled.altitude - sensor.altitude) < 0.1)
        try await scripted.shutDown()
    }

    /// Climbing a floor shows in the stream: 36 Pa less at 1,000 m is 3.30 m by the hydrostatic
    /// equation, Δh = Δp / (ρ g), with the ICAO table's density there (1.1117 kg/m³: 10.90 Pa/m). A
    /// reload with the day's sea-level pressure moves the absolute altitude, not the reading.
    @Test func aClimbAndANewSeaLevelPressureShowInTheStream() async throws {
        let (scripted, client, _) = try await Self.watchingAltitude(on: 3, counts: 89.875)
        #expect(await scripted.advance { !client.altitudes.isEmpty } != nil)
        let ground = try #require(client.altitudes.first)
        Self.read(89.839, on: scripted)
        #expect(await scripted.advance { client.altitudes.last?.pressure != ground.pressure } != nil)
        let upstairs = try #require(client.altitudes.last)
        #expect(abs(upstairs.altitude - ground.altitude - 3.30) < 0.02, "\(upstairs.altitude - ground.altitude) m")

        var settings = LiveSettings.defaults
        settings.seaLevelPressure = 102.325  // 10 hPa above the standard: about 81 m higher
        try await scripted.onLoop { [settings] hub in hub.apply(settings) }
        #expect(await scripted.advance { (client.altitudes.last?.altitude ?? 0) - upstairs.altitude >= 1 } != nil)
        let reloaded = try #require(client.altitudes.last)
        let expected = try #require(StandardAtmosphere.altitude(pressure: 89.839, seaLevelPressure: 102.325))
        #expect(abs(reloaded.altitude - expected) < 1e-3 && (78...84).contains(reloaded.altitude - upstairs.altitude), "\(reloaded)")
        #expect(reloaded.pressure == upstairs.pressure)
        try await scripted.shutDown()
    }

    /// A driver's garbage (a negative pressure, a bus error's huge value) is dropped, not turned into
    /// an altitude; the next good reading is served. Each bad value is read a few times before the next.
    @Test func aNegativeOrAbsurdPressureIsDropped() async throws {
        let (scripted, client, _) = try await Self.watchingAltitude(on: 3, counts: -89.875)
        await scripted.run(for: .milliseconds(200))
        Self.read(2_147_483.647, on: scripted)
        await scripted.run(for: .milliseconds(200))
        #expect(client.altitudes.isEmpty, "\(client.altitudes)")
        Self.read(89.875, on: scripted)
        #expect(await scripted.advance { !client.altitudes.isEmpty } != nil)
        #expect(client.altitudes.first?.pressure == 89.875, "the first reading served is the first good one")
        try await scripted.shutDown()
    }

    /// Issue 40, defect 5: one raw count of the lps22hb (2.4e-5 kPa, its datasheet's 4,096 counts per
    /// hPa) read between good ones was served as 98 km, and its jump as 3.5 km of noise. A pressure
    /// no barometer measures is no altitude, and leaves the precision as it was.
    @Test func aGlitchOfOneRawCountIsNoAltitudeAndNoNoise() async throws {
        let (scripted, client, _) = try await Self.watchingAltitude(on: 2, counts: 2_871_645)
        #expect(await scripted.advance { client.altitudes.last?.precision != nil } != nil)
        let good = client.altitudes.count
        Self.read(1, on: scripted)
        await scripted.run(for: .milliseconds(200))  // a reading or more of the glitch
        Self.read(2_871_600, on: scripted)  // 45 counts less: 0.1 m higher
        #expect(await scripted.advance { client.altitudes.last.map { abs($0.pressure - 2_871_600 * 0.000024414) < 1e-6 } == true } != nil)
        for message in client.altitudes.dropFirst(good) {
            #expect(abs(message.altitude - 3_000) < 1, "\(message)")
            #expect((message.precision ?? 0) < 0.5, "\(message)")
        }
        try await scripted.shutDown()
    }
}

/// Ambient light (the kernel's IIO ABI, `in_illuminance_raw`: "units after application of scale and
/// offset are lux"; a driver without a scale gives counts, iio-sensor-proxy's "vendor" unit): an
/// event stream, its state when watching starts, then each change. Moved from Hardware.AmbientLight,
/// which keeps the discovery of both.
@Suite struct AmbientLightTests {
    /// A hub on `light` reading `counts`, with a client watching `light` that has had its first message.
    static func watching(_ light: DeviceDescriptor, counts: Double) async throws -> (ScriptedHub, ScriptedHub.Client, Hub.ClientID) {
        let (scripted, client, id) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","streams":["light"]}"#, on: [light])
        read(counts, on: scripted, of: light)
        #expect(await scripted.advance { !client.lights.isEmpty } != nil)
        return (scripted, client, id)
    }

    static func read(_ counts: Double, on scripted: ScriptedHub, of light: DeviceDescriptor) {
        scripted.source.counts.withLock { $0[light.number] = [.light: Vector3(x: counts, y: 0, z: 0)] }
    }

    @Test func aWatcherGetsTheLightNowThenEachChangeInLux() async throws {
        let light = Machines.ambientLight[0]
        let (scripted, client, id) = try await Self.watching(light, counts: 100)
        let first = try #require(client.lights.first)
        #expect(first.illuminance == 50 && first.unit == .lux, "100 counts × 0.5 lux: \(first)")
        Self.read(300, on: scripted, of: light)
        #expect(await scripted.advance { client.lights.count > 1 } != nil)
        let changed = try #require(client.lights.last)
        #expect(changed.illuminance == 150 && changed.unit == .lux, "\(changed)")
        #expect(client.lights.count == 2, "a change, not every reading: \(client.lights)")
        try await scripted.send(line: #"{"class":"POLL","streams":["light"]}"#, from: id)
        #expect(client.snapshots.last?.light?.illuminance == 150)
        try await scripted.shutDown()
    }

    /// A driver with no scale gives its counts, said to be vendor units, not lux.
    @Test func aLightWithoutAScaleIsInVendorUnits() async throws {
        let (scripted, client, _) = try await Self.watching(Machines.ambientLight[1], counts: 4000)
        #expect(client.lights.first.map { $0.illuminance == 4000 && $0.unit == .vendor } == true, "\(client.lights)")
        try await scripted.shutDown()
    }
}
