import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// motiond --dbus against the real clients and the real iio-sensor-proxy: Debian's `monitor-sensor`,
/// GLib's `gdbus`, and a client on sd-bus of the tests' own (`BusClient`), on a private system bus.
extension Hardware {
    @Suite struct SensorProxyBridge {
        static let main = "/net/hadess/SensorProxy"
        static let compass = BusClient.compassPath

        /// motiond serving D-Bus on `bus`, on the testbed's devices.
        static func daemon(on bus: PrivateSystemBus) throws -> DaemonProcess {
            let daemon = try DaemonProcess(
                socket: temporarySocketPath(), arguments: ["--dbus", "--state-directory", bus.directory + "/state"],
                environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
            #expect(daemon.waitForLog("serving D-Bus"))
            return daemon
        }

        /// The README's command: monitor-sensor prints, line for line, what it prints with
        /// iio-sensor-proxy while the same fake tablet turns, lies flat, sees more light and something
        /// near. The reference is iio-sensor-proxy's run, made by the script each time.
        @Test func monitorSensorPrintsWithMotiondWhatItPrintsWithIIOSensorProxy() async throws {
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../scripts/dbus-side-by-side").standardized
            // The script makes its own testbeds (umockdev-run): none of this test process's.
            let run = try await runProgram(script.path, ["--no-build"], environment: ["LD_PRELOAD": "", "UMOCKDEV_DIR": ""], timeLimit: 180)
            let text = run.output + run.errors
            #expect(run.status == 0, "\(text)")
            // It did turn, light and near by iio-sensor-proxy's account (the left column), so that two
            // empty outputs cannot agree.
            for line in ["orientation changed: right-up", "orientation changed: bottom-up", "orientation changed: left-up",
                         "Light changed: 150.000000 (lux)", "Proximity value changed: 1"] {
                #expect(text.components(separatedBy: line).count == 3, "\(line) on both sides: \(text)")
            }
        }

        /// `gdbus introspect` shows the same objects, interfaces, members and initial values for motiond
        /// as for Debian's iio-sensor-proxy 3.0 on the same fixture, but for `AccelerometerTilt`, which
        /// upstream added in 3.6.
        @Test func introspectionMatchesIIOSensorProxys() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "tablet-iio-sensor-proxy")
            let bus = try PrivateSystemBus()
            func introspect() throws -> String {
                try [Self.main, Self.compass].map { try bus.gdbus(["introspect", "--dest", BusClient.destination, "--object-path", $0]) }.joined()
            }
            let proxy = try Peer("/usr/sbin/iio-sensor-proxy", bus: bus)
            try waitUntil { (try? introspect())?.contains("HasCompass") == true }
            let upstream = try introspect()
            proxy.stop()
            let daemon = try Self.daemon(on: bus)
            let ours = try introspect()
            _ = daemon
            #expect(ours.contains("readonly s AccelerometerTilt = 'vertical';"))
            let withoutTilt = ours.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.contains("AccelerometerTilt") }.joined(separator: "\n")
            #expect(withoutTilt == upstream)
            // Writing a property is refused as upstream refuses it.
            let set = try bus.gdbus(["call", "--dest", BusClient.destination, "--object-path", Self.main, "--method",
                                     "org.freedesktop.DBus.Properties.Set", "net.hadess.SensorProxy", "HasAccelerometer", "<false>"])
            #expect(set.contains("org.freedesktop.DBus.Error.InvalidArgs: Property “HasAccelerometer” is not writable"), "\(set)")
        }

        /// A claim returns once the sensor's first value is in the properties, so that a program that
        /// reads them right after its claim (Qt Sensors does) reads a value. The expected values are
        /// iio-sensor-proxy's for this fixture (scripts/dbus-side-by-side: `normal`, 50 lux).
        @Test func aClaimReturnsWithTheSensorsFirstValue() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "tablet-iio-sensor-proxy")
            let bus = try PrivateSystemBus()
            let daemon = try Self.daemon(on: bus)
            let client = try BusClient(address: bus.address)
            #expect(try client.property("AccelerometerOrientation") == "undefined")  // nothing runs yet
            try client.call("ClaimAccelerometer")
            #expect(try client.property("AccelerometerOrientation") == "normal")
            try client.call("ClaimLight")
            #expect(try client.property("LightLevel") == "50.0")
            #expect(try client.property("LightLevelUnit") == "lux")
            try client.call("ClaimProximity")
            #expect(try client.property("ProximityNear") == "false")
            _ = daemon
        }

        /// Two programs claim the accelerometer; one vanishes without releasing (killed): the other
        /// is still served, as upstream counts claims per sender.
        @Test func theOtherClaimantStaysServedWhenOneVanishes() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "tablet-iio-sensor-proxy")
            let bus = try PrivateSystemBus()
            let daemon = try Self.daemon(on: bus)
            let first = try Peer("/usr/bin/monitor-sensor", bus: bus)
            let second = try Peer("/usr/bin/monitor-sensor", bus: bus)
            // A peer that connects after the other's claim made the orientation known sees it in its
            // "Has accelerometer (orientation: normal)" line rather than as a change.
            try waitUntil { [first, second].allSatisfy { $0.output.contains("orientation changed: normal") || $0.output.contains("(orientation: normal)") } }
            first.stop()
            // Changed only once the daemon has dropped the first's claim: else a release that wrongly
            // stopped the sensor could come after the turn and pass unseen.
            #expect(daemon.waitForLog("D-Bus claimant left"))
            // Raw (0, 1000, 100) reads right-up through the fixture's matrix (iio-sensor-proxy's reading).
            try testbed.setAttribute("iio:device0", "in_accel_x_raw", "0\n")
            try testbed.setAttribute("iio:device0", "in_accel_y_raw", "1000\n")
            try waitUntil { second.output.contains("orientation changed: right-up") }
            _ = daemon
        }

        /// A claim of a sensor the machine does not have returns at once; when one appears, every client
        /// hears `HasAmbientLight`, and the claimant's light values run.
        @Test func aClaimOfAnAbsentSensorIsServedWhenTheSensorAppears() throws {
            let testbed = try Testbed()
            let devices = try Testbed.fixture("tablet-iio-sensor-proxy").components(separatedBy: "\n\n")
            try testbed.add(devices[0])  // the accelerometer only
            let bus = try PrivateSystemBus()
            let daemon = try Self.daemon(on: bus)
            let listener = try Peer("/usr/bin/gdbus", arguments: ["monitor", "--system", "--dest", BusClient.destination], bus: bus)
            try waitUntil { listener.output.contains("is owned by") }
            let client = try BusClient(address: bus.address)
            let started = Date()
            try client.call("ClaimLight")
            #expect(Date().timeIntervalSince(started) < 1)
            #expect(try client.property("HasAmbientLight") == "false")
            try testbed.add(devices[1])
            try waitUntil { listener.output.contains("'HasAmbientLight': <true>") }
            try waitUntil { (try? client.property("LightLevel")) == "50.0" }
            _ = daemon
        }

        /// The compass heading is the fused heading of the device's top edge (the edge up in `normal`),
        /// clockwise from magnetic north, as Qt Sensors reads `CompassHeading` (QCompassReading::azimuth:
        /// "degrees from magnetic north in a clockwise direction based on the top of the device"). The
        /// fixture lies face up, top edge east (docs/frames.md; `MachineClasses` derives its counts from
        /// the Earth's field): 90°.
        @Test func theCompassHeadingIsTheTopEdgesAzimuth() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "tablet-accelerometer-magnetometer")
            let bus = try PrivateSystemBus()
            let daemon = try Self.daemon(on: bus)
            let client = try BusClient(address: bus.address)
            #expect(try client.compassProperty("HasCompass") == "true")
            try client.call("ClaimCompass", path: BusClient.compassPath, interface: BusClient.compassInterface)
            var heading: Double?
            try? waitUntil {
                heading = (try? client.compassProperty("CompassHeading")).flatMap(Double.init)
                return heading.map { abs($0 - 90) < 2 } ?? false
            }
            kill(daemon.process.processIdentifier, SIGKILL)
            #expect(heading.map { abs($0 - 90) < 2 } == true, "heading \(heading.map { "\($0)" } ?? "none")°; \(daemon.finalLog())")
        }

        /// A sensor hub with its own compass and no magnetometer (hid-sensor-magn-3d reporting only
        /// "Compensated Magnetic North") has a compass, as iio-sensor-proxy says of one (its
        /// iio-buffer-compass); the heading is the hub's, (raw + offset) × scale degrees: 2700 × 0.1 =
        /// 270°, then 451 × 0.1. Its light sensor, which gives only `in_intensity_both_raw`, is the
        /// ambient light, in lux: 350 × 0.1.
        @Test func aSensorHubsOwnCompassAndIntensityServeTheCompassAndTheLight() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "hid-sensor-hub-compass-light")
            let bus = try PrivateSystemBus()
            let daemon = try Self.daemon(on: bus)
            let client = try BusClient(address: bus.address)
            #expect(try client.compassProperty("HasCompass") == "true")
            #expect(try client.property("HasAmbientLight") == "true")
            try client.call("ClaimCompass", path: BusClient.compassPath, interface: BusClient.compassInterface)
            try client.call("ClaimLight")
            func heading() -> String? { try? client.compassProperty("CompassHeading") }
            try? waitUntil { heading() == "270.0" && (try? client.property("LightLevel")) == "35.0" }
            #expect(heading() == "270.0", "\(daemon.finalLog())")
            #expect(try client.property("LightLevel") == "35.0")
            #expect(try client.property("LightLevelUnit") == "lux")
            try testbed.setAttribute("iio:device1", "in_rot_from_north_magnetic_tilt_comp_raw", "451\n")
            try? waitUntil { heading() == "45.1" }
            #expect(heading() == "45.1")
            _ = daemon
        }
    }
}

extension BusClient {
    static let compassPath = "/net/hadess/SensorProxy/Compass"
    static let compassInterface = "net.hadess.SensorProxy.Compass"

    /// A property of the compass object.
    func compassProperty(_ name: String) throws -> String {
        try property(name, path: Self.compassPath, interface: Self.compassInterface)
    }
}
