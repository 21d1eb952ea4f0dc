import Foundation
import Testing
import TestSupport

extension Hardware {
    /// Issue 60, item 13: `/dev/uinput`, through which a process can make a keyboard, is the service's
    /// only where the tablet-mode switch can be wanted: a convertible with an accelerometer in its
    /// base (60-sensor.hwdb's `ACCEL_LOCATION=base`, or the driver's `label` accel-base or `location`
    /// base, as motiond reads them), with motiond.conf not setting `tablet_mode: off`. The rule applied
    /// by udevadm to umockdev machines; needs root (the rule goes in /run/udev/rules.d, and
    /// /etc/motiond is bound over in a mount namespace of the test's own).
    @Suite struct UinputGrant {
        static let uinput = "/sys/devices/virtual/misc/uinput"
        static let grant = "setfacl -m g:motiond:rw /dev/uinput"
        static let revoke = "setfacl -x g:motiond /dev/uinput"

        /// A testbed with `devices` and uinput. udev runs a rule's PROGRAM with the device's properties
        /// as its whole environment: umockdev's preload among uinput's, the rule's look at the other
        /// devices sees the testbed's /sys, as on a machine it sees the machine's.
        static func machine(_ devices: String?) throws -> Testbed {
            let testbed = try Testbed()
            if let devices { try testbed.add(devices) }
            let preload = try #require(ProcessInfo.processInfo.environment["LD_PRELOAD"], "run under umockdev-wrapper")
            try testbed.add("""
                P: /devices/virtual/misc/uinput
                N: uinput
                E: SUBSYSTEM=misc
                E: DEVNAME=/dev/uinput
                E: LD_PRELOAD=\(preload)
                E: UMOCKDEV_DIR=\(testbed.root)
                A: dev=10:223\\n
                """)
            return testbed
        }

        /// What `udevadm test` does with `syspath` under the rule, with `configuration` as
        /// /etc/motiond/motiond.conf (nil: none).
        static func udevTest(_ syspath: String, configuration: String? = nil) async throws -> String {
            try FileManager.default.createDirectory(atPath: "/run/udev/rules.d", withIntermediateDirectories: true)
            let installed = "/run/udev/rules.d/70-motiond.rules"
            try? FileManager.default.removeItem(atPath: installed)
            try FileManager.default.copyItem(atPath: InstallTests.root + "/udev-rules/70-motiond.rules", toPath: installed)
            defer { try? FileManager.default.removeItem(atPath: installed) }
            let etc = NSTemporaryDirectory() + "motiond-etc-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            try FileManager.default.createDirectory(atPath: etc, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: etc) }
            if let configuration { try configuration.write(toFile: etc + "/motiond.conf", atomically: true, encoding: .utf8) }
            // The mount point: the package's own directory, empty where the package is not installed.
            try FileManager.default.createDirectory(atPath: "/etc/motiond", withIntermediateDirectories: true)
            let run = try await InstallTests.run(
                "unshare", ["--mount", "sh", "-c", "mount --bind \"$0\" /etc/motiond && exec udevadm test --action=add \"$1\"", etc, syspath])
            return run.output
        }

        /// The programs the rule would run for the device (udevadm test lists them, runs none).
        static func runs(_ output: String) -> [String] {
            output.split(separator: "\n").filter { $0.hasPrefix("run: ") }.map(String.init)
        }

        static let hwdbBase = """
            P: /devices/platform/HID-SENSOR-200073.11.auto/iio:device1
            N: iio:device1
            E: SUBSYSTEM=iio
            E: DEVNAME=/dev/iio:device1
            E: ACCEL_LOCATION=base
            A: dev=250:1\\n
            A: name=accel_3d\\n
            A: in_accel_x_raw=0\\n
            """
        static let labelledBase = """
            P: /devices/platform/i2c-1/1-0019/iio:device1
            N: iio:device1
            E: SUBSYSTEM=iio
            E: DEVNAME=/dev/iio:device1
            A: dev=250:1\\n
            A: name=bmc150_accel\\n
            A: label=accel-base\\n
            A: in_accel_x_raw=0\\n
            """

        /// A base accelerometer as the hwdb names it, as a cros-ec driver (location) and as a
        /// device-tree label name it: granted. A tablet with one accelerometer, and a machine with no
        /// IIO device: taken back (before: granted on every machine).
        @Test(arguments: [
            ("hwdb", true), ("cros-ec", true), ("label", true), ("tablet", false), ("none", false),
        ])
        func uinputIsTheServicesOnlyWhereABaseAccelerometerIs(machine: String, granted: Bool) async throws {
            let devices: String? = switch machine {
            case "hwdb": Self.hwdbBase
            case "cros-ec": try Testbed.fixture("convertible-two-accelerometers")
            case "label": Self.labelledBase
            case "tablet": try Testbed.fixture("tablet-iio-sensor-proxy")
            default: nil
            }
            let testbed = try Self.machine(devices)
            let output = try await Self.udevTest(Self.uinput)
            _ = testbed
            let runs = Self.runs(output)
            #expect(runs.contains { $0.contains(granted ? Self.grant : Self.revoke) }, "\(machine): \(runs) \(output.suffix(1500))")
            #expect(!runs.contains { $0.contains(granted ? Self.revoke : Self.grant) }, "\(machine): \(runs)")
        }

        /// motiond.conf setting `tablet_mode: off` (plainly, quoted, in a flow mapping): withheld even
        /// on a convertible; `auto`, or `off` in a comment: granted.
        @Test(arguments: [
            ("tablet_mode: off\n", false), ("log_level: info\ntablet_mode: \"off\"\n", false), ("{'tablet_mode': off, log_level: info}\n", false),
            ("tablet_mode: auto\n", true), ("# tablet_mode: off\nlog_level: info\n", true),
        ])
        func tabletModeOffInMotiondConfWithholdsIt(configuration: String, granted: Bool) async throws {
            let testbed = try Self.machine(try Testbed.fixture("convertible-two-accelerometers"))
            let runs = Self.runs(try await Self.udevTest(Self.uinput, configuration: configuration))
            _ = testbed
            #expect(runs.contains { $0.contains(granted ? Self.grant : Self.revoke) }, "\(configuration): \(runs)")
        }

        /// A base accelerometer that appears after uinput has it decided again (a change event to
        /// uinput); the display's accelerometer does not.
        @Test func aBaseAccelerometerHasUinputDecidedAgain() async throws {
            let testbed = try Self.machine(try Testbed.fixture("convertible-two-accelerometers"))
            let retrigger = "echo change > /sys/devices/virtual/misc/uinput/uevent"
            let base = Self.runs(try await Self.udevTest("/sys/devices/platform/cros-ec-accel.1/iio:device1"))
            #expect(base.contains { $0.contains(retrigger) }, "\(base)")
            let display = Self.runs(try await Self.udevTest("/sys/devices/platform/cros-ec-accel.0/iio:device0"))
            #expect(!display.contains { $0.contains(retrigger) }, "\(display)")
            _ = testbed
        }
    }
}
