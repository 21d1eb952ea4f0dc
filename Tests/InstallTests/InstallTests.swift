import Foundation
import Testing
import TestSupport

/// The units, the udev rule and the install, checked with the tools that will run them:
/// systemd-analyze, udevadm (on umockdev devices), make.
@Suite struct InstallTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized.path
    static var products: String { ReplayDaemon.products.path }

    /// Runs a tool from the top of the package; `output` holds both of its output streams.
    static func run(_ command: String, _ arguments: [String], environment: [String: String] = [:]) async throws -> (status: Int32, output: String) {
        let run = try await runProgram(command, arguments, environment: environment, directory: root)
        return (run.status, run.output + run.errors)
    }

    /// `make install` into a fresh DESTDIR, with the binaries the tests were built with.
    static func install(prefix: String = "/usr") async throws -> String {
        let destination = NSTemporaryDirectory() + "motiond-install-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let make = try await run("make", ["install", "NO_BUILD=1", "BUILD_DIR=\(products)", "DESTDIR=\(destination)", "PREFIX=\(prefix)"])
        guard make.status == 0 else { throw TestbedError("make install failed: \(make.output)") }
        return destination
    }

    static func files(under directory: String) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: directory)
        var files: [String] = []
        while let path = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: directory + "/" + path, isDirectory: &isDirectory), !isDirectory.boolValue { files.append("/" + path) }
        }
        return files.sorted()
    }

    /// The unit, and the unit with the D-Bus or the network drop-in applied (the drop-in's lines after
    /// the unit's: what systemd merges), each at most 1.5 by `systemd-analyze security`.
    @Test func theServicesExposureIsAtMostOneAndAHalfWithDBusOrNetworkOrWithout() async throws {
        let merged = NSTemporaryDirectory() + "motiond-dbus-\(getpid())/motiond.service"
        try FileManager.default.createDirectory(atPath: (merged as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let unit = try String(contentsOfFile: "systemd/motiond.service", encoding: .utf8)
        try (unit + "\n" + String(contentsOfFile: "systemd/motiond-sensorproxy.conf", encoding: .utf8)).write(toFile: merged, atomically: true, encoding: .utf8)
        // With the fleet drop-in: IP sockets for MQTT, metrics and network sensors.
        let networked = NSTemporaryDirectory() + "motiond-network-\(getpid())/motiond.service"
        try FileManager.default.createDirectory(atPath: (networked as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try (unit + "\n" + String(contentsOfFile: "systemd/motiond-network.conf", encoding: .utf8)).write(toFile: networked, atomically: true, encoding: .utf8)
        for path in ["systemd/motiond.service", merged, networked] {
            let result = try await Self.run("systemd-analyze", ["security", "--offline=yes", "--no-pager", path])
            let line = try #require(result.output.split(separator: "\n").first { $0.contains("Overall exposure level for motiond.service") }, "\(result.output)")
            print("\(path): \(line)")
            let score = try #require(line.split(separator: " ").compactMap { Double($0) }.first, "\(line)")
            #expect(score <= 1.5, "\(path): \(line)")
        }
    }

    @Test func theInstallPutsTheseFilesAndTheUninstallRemovesThem() async throws {
        let destination = try await Self.install()
        #expect(Self.files(under: destination) == [
            "/etc/motiond/motiond.conf",
            "/usr/bin/motionctl",
            "/usr/bin/motiond",
            "/usr/lib/systemd/system/motiond.service",
            "/usr/lib/systemd/system/motiond.socket",
            "/usr/lib/sysusers.d/motiond.conf",
            "/usr/lib/udev/rules.d/70-motiond.rules",
            "/usr/sbin/motiond-sensorproxy",
            "/usr/share/dbus-1/system.d/motiond.conf",
            "/usr/share/doc/motiond/README.md",
            "/usr/share/doc/motiond/activity.md",
            "/usr/share/doc/motiond/broad-04-slow-rotation.motionrec.gz",
            "/usr/share/doc/motiond/client.md",
            "/usr/share/doc/motiond/dbus.md",
            "/usr/share/doc/motiond/fleet.md",
            "/usr/share/doc/motiond/frames.md",
            "/usr/share/doc/motiond/fusion.md",
            "/usr/share/doc/motiond/games.md",
            "/usr/share/doc/motiond/protocol.md",
            "/usr/share/doc/motiond/python.md",
            "/usr/share/doc/motiond/recording.md",
            "/usr/share/doc/motiond/security.md",
            "/usr/share/doc/motiond/view.md",
            "/usr/share/man/man1/motionctl.1",
            "/usr/share/man/man5/motiond.conf.5",
            "/usr/share/man/man8/motiond-sensorproxy.8",
            "/usr/share/man/man8/motiond.8",
            "/usr/share/motiond/network.conf",
            "/usr/share/motiond/sensorproxy.conf",
            "/usr/share/motiond/view/index.html",
            "/usr/share/motiond/view/view.css",
            "/usr/share/motiond/view/view.js",
            "/usr/share/polkit-1/actions/net.hadess.SensorProxy.motiond.policy",
        ])
        let unit = try String(contentsOfFile: destination + "/usr/lib/systemd/system/motiond.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/bin/motiond\n"), "the unit runs the binary where PREFIX put it")
        let dropIn = try String(contentsOfFile: destination + "/usr/share/motiond/sensorproxy.conf", encoding: .utf8)
        #expect(dropIn.contains("ExecStart=/usr/bin/motiond --dbus\n"), "so does the D-Bus drop-in")

        let uninstall = try await Self.run("make", ["uninstall", "DESTDIR=\(destination)", "PREFIX=/usr"])
        #expect(uninstall.status == 0, "\(uninstall.output)")
        #expect(Self.files(under: destination) == [], "nothing left behind")
    }

    /// README's "Fleet" section is `scripts/fleet-demo`: its conf streams the attitude to a broker that
    /// mosquitto_sub reads, its metrics count the messages, and the Python example prints attitudes.
    @Test func theFleetSectionRunsAsWritten() async throws {
        let readme = try String(contentsOfFile: Self.root + "/README.md", encoding: .utf8)
        let script = try String(contentsOfFile: Self.root + "/scripts/fleet-demo", encoding: .utf8)
        // The conf and the commands README shows are the script's.
        for line in ["  broker: mqtt://localhost:1883", "    - {stream: motion, interval: 0.5, frame: xArbitraryCorrectedZVertical}",
                     "mosquitto_sub -h localhost -t 'robot7/#' -v -C 3", "curl -s http://127.0.0.1:9464/metrics | grep '^motiond_mqtt'"] {
            #expect(readme.contains(line) && script.contains(line), "\(line)")
        }
        let run = try await Self.run("scripts/fleet-demo", ["--no-build"], environment: ["MOTIOND": Self.products + "/motiond"])
        #expect(run.status == 0, "\(run.output)")
        let lines = run.output.split(separator: "\n")
        #expect(lines.contains("robot7/status online"))
        let motion = lines.filter { $0.hasPrefix("robot7/motion {\"class\":\"MOTION\"") }
        #expect(motion.count >= 1 && motion.allSatisfy { $0.contains("\"frame\":\"xArbitraryCorrectedZVertical\"") }, "\(run.output)")
        #expect(lines.contains("motiond_mqtt_connected 1.0"))
        #expect(lines.filter { $0.hasPrefix("roll ") }.count == 10)
    }

    @Test func systemdFindsNothingToSayAboutTheInstalledUnits() async throws {
        let destination = try await Self.install()
        // The installed units, pointed at the installed binary (verify checks that it is executable),
        // and the installed man pages (verify runs `man` for each Documentation= page).
        let units = destination + "/verify"
        try FileManager.default.createDirectory(atPath: units, withIntermediateDirectories: true)
        let service = try String(contentsOfFile: destination + "/usr/lib/systemd/system/motiond.service", encoding: .utf8)
            .replacingOccurrences(of: "ExecStart=/usr/bin/motiond", with: "ExecStart=\(destination)/usr/bin/motiond")
        try service.write(toFile: units + "/motiond.service", atomically: true, encoding: .utf8)
        // The D-Bus drop-in, as switch-to-motiond puts it.
        try FileManager.default.createDirectory(atPath: units + "/motiond.service.d", withIntermediateDirectories: true)
        let dropIn = try String(contentsOfFile: destination + "/usr/share/motiond/sensorproxy.conf", encoding: .utf8)
            .replacingOccurrences(of: "ExecStart=/usr/bin/motiond", with: "ExecStart=\(destination)/usr/bin/motiond")
        try dropIn.write(toFile: units + "/motiond.service.d/sensorproxy.conf", atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(atPath: destination + "/usr/lib/systemd/system/motiond.socket", toPath: units + "/motiond.socket")
        // As switch-to-motiond leaves the machine: iio-sensor-proxy masked (a unit linked to /dev/null
        // first in the search path), else systemd refuses its unit for wanting the same bus name.
        try FileManager.default.createSymbolicLink(atPath: units + "/iio-sensor-proxy.service", withDestinationPath: "/dev/null")
        let verify = try await Self.run(
            "systemd-analyze", ["verify", units + "/motiond.socket", units + "/motiond.service"],
            environment: ["MANPATH": destination + "/usr/share/man", "SYSTEMD_UNIT_PATH": units + ":"])
        print("systemd-analyze verify: exit \(verify.status), output: \"\(verify.output)\"")
        #expect(verify.status == 0 && verify.output.isEmpty, "\(verify.output)")
    }
}

/// The tests that apply the udev rule with udevadm, each to umockdev devices of its child's own
/// (`ChildTestbed`): beside the serialized `Hardware` suite, but one at a time among themselves, as
/// UdevRule writes the host's /run/udev (its rules.d, and the database udevadm test fills) while
/// UinputGrant checks that applying the rule leaves the host's /run/udev as it was.
@Suite(.serialized, .onOwnThreads) enum UdevRules {}

extension UdevRules {
    /// The udev rule applied by udevadm to umockdev devices. Needs root: it creates motiond's users
    /// (systemd-sysusers with the package's file) and puts the rule in /run/udev/rules.d for the test.
    /// Moved from `Hardware.UdevRule` (issue 61): each `udevadm test` runs under umockdev-run on the
    /// same devices, which nothing changes while it runs.
    @Suite struct UdevRule {
        static let devices = """
            P: /devices/platform/spi-0/spi0.0/iio:device0
            N: iio:device0
            E: SUBSYSTEM=iio
            E: DEVNAME=/dev/iio:device0
            E: MAJOR=250
            E: MINOR=0
            A: dev=250:0\\n
            A: name=bmi160\\n
            A: in_accel_x_raw=0\\n
            A: in_anglvel_x_raw=0\\n

            P: /devices/platform/i2c-1/1-0039/iio:device1
            N: iio:device1
            E: SUBSYSTEM=iio
            E: DEVNAME=/dev/iio:device1
            E: MAJOR=250
            E: MINOR=1
            A: dev=250:1\\n
            A: name=stk3310\\n
            A: in_proximity_raw=10\\n

            P: /devices/platform/i2c-1/1-0029/iio:device3
            N: iio:device3
            E: SUBSYSTEM=iio
            E: DEVNAME=/dev/iio:device3
            E: MAJOR=250
            E: MINOR=3
            A: dev=250:3\\n
            A: name=tsl2563\\n
            A: in_illuminance0_input=120\\n

            P: /devices/platform/soc/adc/iio:device2
            N: iio:device2
            E: SUBSYSTEM=iio
            E: DEVNAME=/dev/iio:device2
            E: MAJOR=250
            E: MINOR=2
            A: dev=250:2\\n
            A: name=ads1015\\n
            A: in_voltage0_raw=1200\\n
            """

        /// What `udevadm test` does with `syspath` of `machine`; both of its output streams.
        func udevTest(_ syspath: String, on machine: ChildTestbed) async throws -> String {
            let run = try await machine.run(
                "udevadm", ["test", "--action=add", syspath], environment: ["SYSTEMD_LOG_LEVEL": "debug"], directory: InstallTests.root)
            return run.output + run.errors
        }

        @Test func motionProximityAndLightDevicesAreTaggedGivenToMotiondAndStartTheService() async throws {
            let sysusers = try await InstallTests.run("systemd-sysusers", [InstallTests.root + "/systemd/motiond.sysusers"])
            #expect(sysusers.status == 0, "\(sysusers.output)")
            let group = try await InstallTests.run("getent", ["group", "motiond"]).output
            let gid = try #require(group.split(separator: ":").dropFirst(2).first, "the motiond group exists: \(group)")

            try FileManager.default.createDirectory(atPath: "/run/udev/rules.d", withIntermediateDirectories: true)
            let installed = "/run/udev/rules.d/70-motiond.rules"
            try? FileManager.default.removeItem(atPath: installed)
            try FileManager.default.copyItem(atPath: InstallTests.root + "/udev-rules/70-motiond.rules", toPath: installed)
            defer { try? FileManager.default.removeItem(atPath: installed) }

            let machine = try ChildTestbed(devices: Self.devices)
            for syspath in ["/sys/devices/platform/spi-0/spi0.0/iio:device0", "/sys/devices/platform/i2c-1/1-0039/iio:device1", "/sys/devices/platform/i2c-1/1-0029/iio:device3"] {
                let output = try await udevTest(syspath, on: machine)
                #expect(output.contains("70-motiond.rules"), "the rule was read: \(output.suffix(2000))")
                #expect(output.contains("\nTAGS=:") && output.split(separator: "\n").contains { $0.hasPrefix("TAGS=") && $0.contains(":motiond:") && $0.contains(":systemd:") }, "\(syspath): \(output.suffix(1500))")
                #expect(output.contains("\nSYSTEMD_WANTS=motiond.service"), "\(output.suffix(1500))")
                #expect(output.contains(try Regex("70-motiond\\.rules:[0-9]+ GROUP \(gid)\n")), "\(output.suffix(1500))")
                #expect(output.contains(try Regex("70-motiond\\.rules:[0-9]+ MODE 0660\n")))
                #expect(output.contains("chgrp motiond"), "the sysfs attributes a capture writes go to the group")
                #expect(output.contains("events/in_accel*_en"), "so do the enables of the motion events that wake a resting accelerometer")
            }
            let adc = try await udevTest("/sys/devices/platform/soc/adc/iio:device2", on: machine)
            #expect(!adc.contains("motiond.service") && !adc.contains(":motiond:"), "an ADC is none of motiond's business: \(adc.suffix(1500))")
        }
    }
}
