import Foundation
import HubTestKit
import Logging
import MotionCore
import NIOPosix
import TestSupport
import Testing

@testable import MotionDBus
@testable import MotionDevices
@testable import MotionHub

#if canImport(Glibc)
import Glibc
#endif

/// motiond --dbus against the real clients and the real iio-sensor-proxy: Debian's `monitor-sensor`,
/// GLib's `gdbus`, and a client on sd-bus of the tests' own (`BusClient`), on a private system bus:
/// end to end, through umockdev. The bridge's rules are `SensorProxyBridgeRules`, without umockdev.
extension Hardware {
    @Suite struct SensorProxyBridge {
        static let main = "/net/hadess/SensorProxy"
        static let compass = BusClient.compassPath

        /// A testbed of `fixture`, a private bus, motiond serving it, and a client on the bus: held
        /// together, so that the testbed outlives the daemon that reads it.
        struct Served {
            let testbed: Testbed
            let bus: PrivateSystemBus
            let daemon: DaemonProcess
            let client: BusClient

            init(fixture: String) throws {
                testbed = try Testbed()
                try testbed.add(fixture: fixture)
                bus = try PrivateSystemBus()
                daemon = try SensorProxyBridge.daemon(on: bus)
                client = try BusClient(address: bus.address)
            }
        }

        /// motiond serving D-Bus on `bus`, on the testbed's devices, with `arguments` besides.
        static func daemon(on bus: PrivateSystemBus, arguments: [String] = []) throws -> DaemonProcess {
            let daemon = try DaemonProcess(
                socket: temporarySocketPath(), arguments: ["--dbus", "--state-directory", bus.directory + "/state"] + arguments,
                environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
            #expect(daemon.waitForLog("serving D-Bus"))
            return daemon
        }

        /// `gdbus introspect` shows the same objects, interfaces, members and initial values for motiond
        /// as for Debian's iio-sensor-proxy 3.0 on the same fixture, but for `AccelerometerTilt`, which
        /// upstream added in 3.6, and motiond's own interfaces (`io.github.motiond.Posture`, checked on
        /// its own, and `io.github.motiond.Presence`): upstream's interfaces are untouched by them.
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
            // motiond's interface, as gdbus prints it: from its opening line to the first closing one.
            var lines = ours.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let opening = try #require(lines.firstIndex(of: "  interface \(BusClient.postureInterface) {"), "\(ours)")
            let closing = try #require(lines[opening...].firstIndex(of: "  };"))
            let posture = lines[opening...closing].joined(separator: "\n")
            lines.removeSubrange(opening...closing)
            for member in ["ClaimPosture();", "ReleasePosture();", "readonly b HasPosture = false;", "readonly s Posture = 'undefined';", "readonly d HingeAngle = 0.0;"] {
                #expect(posture.contains(member), "\(member) in \(posture)")
            }
            // And its presence interface (PresenceInterfaceTests checks its members).
            let presenceOpening = try #require(lines.firstIndex(of: "  interface \(BusClient.presenceInterface) {"), "\(ours)")
            lines.removeSubrange(presenceOpening...(try #require(lines[presenceOpening...].firstIndex(of: "  };"))))
            let upstreamsOnly = lines.filter { !$0.contains("AccelerometerTilt") }.joined(separator: "\n")
            #expect(upstreamsOnly == upstream)
            // Writing a property is refused as upstream refuses it.
            let set = try bus.gdbus(["call", "--dest", BusClient.destination, "--object-path", Self.main, "--method",
                                     "org.freedesktop.DBus.Properties.Set", "net.hadess.SensorProxy", "HasAccelerometer", "<false>"])
            #expect(set.contains("org.freedesktop.DBus.Error.InvalidArgs: Property “HasAccelerometer” is not writable"), "\(set)")
        }

        /// A claim returns once the sensor's first value is in the properties, so that a program that
        /// reads them right after its claim (Qt Sensors does) reads a value. The expected values are
        /// iio-sensor-proxy's for this fixture (scripts/dbus-side-by-side: `normal`, 50 lux).
        @Test func aClaimReturnsWithTheSensorsFirstValue() throws {
            let served = try Served(fixture: "tablet-iio-sensor-proxy")
            let (daemon, client) = (served.daemon, served.client)
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

        /// Sets the convertible's display at `degrees` about the hinge and waits until the daemon has
        /// read it. The base lies flat, keyboard up, reading (0, 0, −1000) counts; the display at a
        /// hinge angle θ reads (0, −1000 sin θ, −1000 cos θ) (the fixture's (0, −866, 500) is 120°;
        /// MachineClassTests, TabletModeTests).
        static func fold(_ testbed: Testbed, to degrees: Double) throws {
            let θ = degrees * .pi / 180
            try testbed.setAttribute("iio:device0", "in_accel_y_raw", "\(Int((-1000 * sin(θ)).rounded()))\n")
            try testbed.setAttribute("iio:device0", "in_accel_z_raw", "\(Int((-1000 * cos(θ)).rounded()))\n")
            try testbed.waitForReads(of: "in_accel_z_raw", on: "iio:device0")
        }

        /// The `PropertiesChanged` signals of motiond's posture interface that `dbus-monitor` saw: each
        /// signal's destination and its text (the changed properties as dbus-monitor prints them).
        static func postureSignals(in monitored: String) -> [(destination: String, text: String)] {
            monitored.components(separatedBy: "\nsignal ").compactMap { block in
                guard block.contains("member=PropertiesChanged"), block.contains(#"string "\#(BusClient.postureInterface)""#) else { return nil }
                let destination = block.components(separatedBy: "destination=").dropFirst().first?.split(separator: " ").first.map(String.init)
                return (destination ?? "everyone", block)
            }
        }

        /// motiond's own interface beside upstream's (`io.github.motiond.Posture`, docs/dbus.md), on a
        /// convertible with a display's and a base's accelerometer: it has a posture; before a claim the
        /// posture is `undefined`; the claim returns with the first (laptop at the fixture's 120°); the
        /// posture then follows the hinge to tent (240°) and tablet (335°), each change a
        /// `PropertiesChanged` sent to the claimant alone (`dbus-monitor` sees every message on the
        /// bus, with its destination); and the claimant leaving the bus drops its claim, and with it the
        /// hinge's watch: the base's accelerometer, read only for the hinge, is no longer read. The
        /// tablet-mode switch, which would watch the hinge itself, is off.
        @Test func thePostureFollowsTheHingeAndTellsItsClaimantOnly() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "convertible-two-accelerometers")
            let bus = try PrivateSystemBus()
            let daemon = try Self.daemon(on: bus, arguments: ["--tablet-mode", "off"])
            let monitor = try Peer("/usr/bin/dbus-monitor", arguments: ["--address", bus.address], bus: bus)
            try waitUntil { monitor.output.contains("NameLost") }  // it became a monitor
            var client: BusClient? = try BusClient(address: bus.address)
            let claimant = try #require(client).uniqueName
            func posture() -> String? { try? client?.postureProperty("Posture") }
            func angle() -> Double? { (try? client?.postureProperty("HingeAngle")).flatMap { $0.flatMap(Double.init) } }
            #expect(try client?.postureProperty("HasPosture") == "true")
            // Upstream's accelerometer is the display's, as before.
            #expect(try client?.property("HasAccelerometer") == "true")
            #expect(posture() == "undefined")  // nothing runs yet
            #expect(try testbed.reads(of: "in_accel_z_raw", on: "iio:device1", during: 0.6) == 0, "the base is read only for the hinge")
            try client?.call("ClaimPosture", interface: BusClient.postureInterface)
            #expect(posture() == "laptop", "the claim returns with the first value")
            #expect(angle().map { abs($0 - 120) <= 1 } == true, "\(angle().map { "\($0)" } ?? "no angle")°")
            for (degrees, expected) in [(240.0, "tent"), (335, "tablet")] {
                try Self.fold(testbed, to: degrees)
                try? waitUntil { posture() == expected }
                #expect(posture() == expected, "at \(degrees)°; \(daemon.finalLog())")
                try? waitUntil { angle().map { abs($0 - degrees) <= 1 } == true }
                #expect(angle().map { abs($0 - degrees) <= 1 } == true, "\(angle().map { "\($0)" } ?? "no angle")° at \(degrees)°")
                try? waitUntil { Self.postureSignals(in: monitor.output).contains { $0.text.contains(#"string "\#(expected)""#) } }
                let told = Self.postureSignals(in: monitor.output).filter { $0.text.contains(#"string "\#(expected)""#) }
                #expect(told.map(\.destination) == [claimant], "\(expected): one PropertiesChanged, to the claimant: \(monitor.output)")
            }
            // Every change of the posture's values went to the claimant only; the first came with the claim.
            let signals = Self.postureSignals(in: monitor.output)
            #expect(signals.count >= 2 && signals.allSatisfy { $0.destination == claimant }, "\(signals.map(\.destination))")
            #expect(try testbed.reads(of: "in_accel_z_raw", on: "iio:device1", during: 0.6) > 0, "the base is read while the posture is claimed")
            client = nil  // its connection closes: it leaves the bus
            #expect(daemon.waitForLog("D-Bus claimant left; its claims are dropped"))
            // The hub's watch ends a moment after the claim: past that, the base is no longer read.
            try? waitUntil { (try? testbed.reads(of: "in_accel_z_raw", on: "iio:device1", during: 0.6)) == 0 }
            #expect(try testbed.reads(of: "in_accel_z_raw", on: "iio:device1", during: 0.6) == 0, "the base is still read: \(daemon.finalLog())")
        }
    }
}

extension BusClient {
    static let compassPath = "/net/hadess/SensorProxy/Compass"
    static let compassInterface = "net.hadess.SensorProxy.Compass"
    /// motiond's own interface on the main object (docs/dbus.md).
    static let postureInterface = "io.github.motiond.Posture"

    /// A property of the compass object.
    func compassProperty(_ name: String) throws -> String {
        try property(name, path: Self.compassPath, interface: Self.compassInterface)
    }

    /// A property of motiond's posture interface.
    func postureProperty(_ name: String) throws -> String {
        try property(name, interface: Self.postureInterface)
    }
}

/// The README's side-by-side check. The script makes its own testbeds (umockdev-run) and runs its
/// programs without this process's umockdev, so it needs none of the `Hardware` suite's and runs beside it.
@Suite struct SensorProxySideBySide {
    /// The README's command: monitor-sensor prints, line for line, what it prints with
    /// iio-sensor-proxy while the same fake tablet turns, lies flat, sees more light and something
    /// near. The reference is iio-sensor-proxy's run, made by the script each time.
    @Test func monitorSensorPrintsWithMotiondWhatItPrintsWithIIOSensorProxy() async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../scripts/dbus-side-by-side").standardized
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
}

/// The D-Bus drop-in's rules on a hub in this process: the daemon's own front end
/// (`SensorProxyFrontEnd`, its bridge a client of the hub) serving a private bus, the hub's devices
/// the hub test kit's scripted ones, each built from its umockdev fixture and polled on the hub's
/// loop, reading the counts its fixture's attributes hold. No umockdev: these run beside the
/// `Hardware` suite, whose `SensorProxyBridge` keeps the checks through motiond, umockdev and the
/// real clients. The expected values are those of the same fixtures there.
@Suite(.onOwnThreads) struct SensorProxyBridgeRules {
    /// tablet-iio-sensor-proxy: a bma250e (0.00980665 m/s² per count, udev's hwdb matrix `0, -1, 0;
    /// -1, 0, 0; 0, 0, 1`), a tsl2563 (0.5 lux per count) and an stk3310 (near at 100).
    static let tablet: [DeviceDescriptor] = [
        Machines.device(
            0, "bma250e", "/sys/devices/platform/accelerometer/iio:device0",
            sensors: [Machines.vector(.accelerometer, "accel", scale: 0.00980665, mountMatrix: [0, -1, 0, -1, 0, 0, 0, 0, 1], source: "udev:ACCEL_MOUNT_MATRIX")]),
        Machines.device(
            1, "tsl2563", "/sys/devices/platform/als/iio:device1",
            sensors: [Machines.scalar(.light, "illuminance", attribute: "in_illuminance_raw", scale: 0.5, readsVendorUnits: false)]),
        Machines.device(
            2, "stk3310", "/sys/devices/platform/proximity/iio:device2",
            sensors: [Machines.scalar(.proximity, "proximity", attribute: "in_proximity_raw", nearLevel: 100)]),
    ]
    /// Its attributes' counts: the accelerometer (1000, 0, 100), the light 100, the proximity 50 (far).
    static let tabletCounts: [DeviceNumber: [SensorKind: Vector3]] = [
        DeviceNumber(0): [.accelerometer: Vector3(x: 1000, y: 0, z: 100)],
        DeviceNumber(1): [.light: Vector3(x: 100, y: 0, z: 0)],
        DeviceNumber(2): [.proximity: Vector3(x: 50, y: 0, z: 0)],
    ]

    /// A hub on scripted `devices` reading `counts`, serving D-Bus on a private bus, and a client on it.
    final class Served {
        let source: ScriptedSource
        let bus: PrivateSystemBus
        let client: BusClient
        private let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let hub: Hub
        private let frontEnd: SensorProxyFrontEnd

        init(_ devices: [DeviceDescriptor], counts: [DeviceNumber: [SensorKind: Vector3]]) throws {
            source = ScriptedSource(devices: devices)
            source.counts.withLock { $0 = counts }
            let hub = Hub(
                eventLoop: loops.next(), logger: Logger(label: "motiond", factory: { _ in SwiftLogNoOpLogHandler() }), release: "test",
                store: nil, source: source)
            self.hub = hub
            try Self.list(devices, on: hub)
            bus = try PrivateSystemBus()
            frontEnd = SensorProxyFrontEnd(hub: hub, address: bus.address)
            try frontEnd.start()
            client = try BusClient(address: bus.address)
        }

        /// The machine's devices are now `devices`, as the hub lists them on udev's word.
        func list(_ devices: [DeviceDescriptor]) throws { try Self.list(devices, on: hub) }

        private static func list(_ devices: [DeviceDescriptor], on hub: Hub) throws {
            try hub.eventLoop.submit { hub.apply(.success(DeviceListing(devices: devices, problems: []))) }.wait()
        }

        deinit {
            try? frontEnd.stop()
            let hub = hub
            try? hub.eventLoop.submit { hub.stopAll() }.wait()
            // The captures' stops end on the loop: shut down before, it says it cannot schedule them.
            hub.offLoop.waitUntilDone()
            try? loops.syncShutdownGracefully()
        }
    }

    /// A desktop releases the accelerometer at each lock and suspend and claims it again at each
    /// unlock and resume, with the device lying still: each claim returns with the orientation, one
    /// read of the sensor after it opens (as the first claim does), not after the 3 s that a claim
    /// waits at most for a state (`SensorProxyService.claimPatience`), which every claim after the
    /// first took when the hub sent only changes.
    @Test func everyClaimAfterAReleaseReturnsWithTheStateAtOnce() throws {
        let served = try Served(Self.tablet, counts: Self.tabletCounts)
        let (source, client) = (served.source, served.client)
        for claim in 1...3 {
            let start = ContinuousClock.now
            try client.call("ClaimAccelerometer")
            let took = ContinuousClock.now - start
            #expect(try client.property("AccelerometerOrientation") == "normal")
            #expect(took < .milliseconds(500), "claim \(claim) took \(took)")
            try client.call("ReleaseAccelerometer")
            // The release closed the accelerometer.
            #expect((try? waitUntil { source.running(DeviceNumber(0)) == nil }) != nil, "claim \(claim)'s release left the accelerometer open")
        }
        withExtendedLifetime(served) {}  // the hub and its bus serve until the test ends
    }

    /// A claim of a sensor the machine does not have returns at once; when one appears, every client
    /// hears `HasAmbientLight`, and the claimant's light values run.
    @Test func aClaimOfAnAbsentSensorIsServedWhenTheSensorAppears() throws {
        let served = try Served([Self.tablet[0]], counts: Self.tabletCounts)  // the accelerometer only
        let listener = try Peer("/usr/bin/gdbus", arguments: ["monitor", "--system", "--dest", BusClient.destination], bus: served.bus)
        try waitUntil { listener.output.contains("is owned by") }
        let client = served.client
        let started = Date()
        try client.call("ClaimLight")
        #expect(Date().timeIntervalSince(started) < 1)
        #expect(try client.property("HasAmbientLight") == "false")
        try served.list(Array(Self.tablet[0...1]))
        try waitUntil { listener.output.contains("'HasAmbientLight': <true>") }
        try waitUntil { (try? client.property("LightLevel")) == "50.0" }
        withExtendedLifetime(served) {}  // the hub and its bus serve until the test ends
    }

    /// The compass heading is the fused heading of the device's top edge (the edge up in `normal`),
    /// clockwise from magnetic north, as Qt Sensors reads `CompassHeading` (QCompassReading::azimuth:
    /// "degrees from magnetic north in a clockwise direction based on the top of the device"). The
    /// tablet-accelerometer-magnetometer fixture lies face up, top edge east (docs/frames.md; its
    /// counts are derived from the Earth's field): 90°.
    @Test func theCompassHeadingIsTheTopEdgesAzimuth() throws {
        let served = try Served([Machines.tabletAccelerometer, Machines.tabletMagnetometer], counts: [
            DeviceNumber(0): [.accelerometer: Vector3(x: 0, y: 0, z: 1000)], DeviceNumber(1): [.magnetometer: Vector3(x: 190, y: 0, z: -460)],
        ])
        let client = served.client
        #expect(try client.compassProperty("HasCompass") == "true")
        try client.call("ClaimCompass", path: BusClient.compassPath, interface: BusClient.compassInterface)
        var heading: Double?
        try? waitUntil {
            heading = (try? client.compassProperty("CompassHeading")).flatMap(Double.init)
            return heading.map { abs($0 - 90) < 2 } ?? false
        }
        #expect(heading.map { abs($0 - 90) < 2 } == true, "heading \(heading.map { "\($0)" } ?? "none")°")
        withExtendedLifetime(served) {}  // the hub and its bus serve until the test ends
    }

    /// A sensor hub with its own compass and no magnetometer (hid-sensor-magn-3d reporting only
    /// "Compensated Magnetic North", the hid-sensor-hub-compass-light fixture) has a compass, as
    /// iio-sensor-proxy says of one (its iio-buffer-compass); the heading is the hub's, (raw + offset)
    /// × scale degrees: 2700 × 0.1 = 270°, then 451 × 0.1. Its light sensor, which gives only
    /// `in_intensity_both_raw`, is the ambient light, in lux: 350 × 0.1.
    @Test func aSensorHubsOwnCompassAndIntensityServeTheCompassAndTheLight() throws {
        let hub = "/sys/devices/pci0000:00/0000:00:12.0"
        let served = try Served([
            Machines.device(0, "accel_3d", hub + "/HID-SENSOR-200073.2.auto/iio:device0", sensors: [Machines.vector(.accelerometer, "accel", scale: 0.00980665)]),
            Machines.device(1, "magn_3d", hub + "/HID-SENSOR-200083.3.auto/iio:device1", sensors: [
                Machines.scalar(.compass, "rot_from_north_magnetic_tilt_comp", attribute: "in_rot_from_north_magnetic_tilt_comp_raw", scale: 0.1),
            ]),
            Machines.device(2, "als", hub + "/HID-SENSOR-200041.4.auto/iio:device2", sensors: [
                Machines.scalar(.light, "intensity_both", attribute: "in_intensity_both_raw", scale: 0.1, readsVendorUnits: false),
            ]),
        ], counts: [
            DeviceNumber(0): [.accelerometer: Vector3(x: 0, y: 0, z: 1000)], DeviceNumber(1): [.compass: Vector3(x: 2700, y: 0, z: 0)],
            DeviceNumber(2): [.light: Vector3(x: 350, y: 0, z: 0)],
        ])
        let client = served.client
        #expect(try client.compassProperty("HasCompass") == "true")
        #expect(try client.property("HasAmbientLight") == "true")
        try client.call("ClaimCompass", path: BusClient.compassPath, interface: BusClient.compassInterface)
        try client.call("ClaimLight")
        func heading() -> String? { try? client.compassProperty("CompassHeading") }
        try? waitUntil { heading() == "270.0" && (try? client.property("LightLevel")) == "35.0" }
        #expect(heading() == "270.0")
        #expect(try client.property("LightLevel") == "35.0")
        #expect(try client.property("LightLevelUnit") == "lux")
        served.source.counts.withLock { $0[DeviceNumber(1)] = [.compass: Vector3(x: 451, y: 0, z: 0)] }
        try? waitUntil { heading() == "45.1" }
        #expect(heading() == "45.1")
        withExtendedLifetime(served) {}  // the hub and its bus serve until the test ends
    }

    /// A machine with one accelerometer has no hinge: no posture, and a claim returns at once.
    @Test func aTabletWithOneAccelerometerHasNoPosture() throws {
        let served = try Served(Self.tablet, counts: Self.tabletCounts)
        try withExtendedLifetime(served) {
            let client = served.client
            #expect(try client.postureProperty("HasPosture") == "false")
            let started = Date()
            try client.call("ClaimPosture", interface: BusClient.postureInterface)
            #expect(Date().timeIntervalSince(started) < 1)
            #expect(try client.postureProperty("Posture") == "undefined")
        }
    }
}
