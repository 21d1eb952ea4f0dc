import Foundation
import Testing
import TestSupport

/// Whether the rule can be applied here: as root (udevadm test, the mounts), with umockdev-run (its
/// preload goes to the rule's PROGRAM), and `unshare --mount` works.
private let canApplyTheUinputRule: Bool = {
    guard getuid() == 0, ChildTestbed.isAvailable else { return false }
    let probe = Process()
    probe.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    probe.arguments = ["unshare", "--mount", "true"]
    probe.standardOutput = FileHandle.nullDevice
    probe.standardError = FileHandle.nullDevice
    guard (try? probe.runWithSteadyEnvironment()) != nil else { return false }
    probe.waitUntilExit()
    return probe.terminationStatus == 0
}()

extension UdevRules {
    /// Issue 60, item 13: `/dev/uinput`, through which a process can make a keyboard, is the service's
    /// only where the tablet-mode switch can be wanted: a convertible with an accelerometer in its
    /// base (60-sensor.hwdb's `ACCEL_LOCATION=base`, or the driver's `label` accel-base or `location`
    /// base, as motiond reads them), with motiond.conf not setting `tablet_mode: off`. The rule applied
    /// by udevadm to umockdev machines, in a mount namespace of the test's own: skipped where that
    /// cannot be (not root, no umockdev-run, no `unshare --mount`, which needs CAP_SYS_ADMIN).
    /// Moved from `Hardware.UinputGrant` (issue 61): each `udevadm test` runs under umockdev-run, on a
    /// machine that nothing changes while it runs.
    @Suite(.enabled(if: canApplyTheUinputRule, "needs root, umockdev-run and unshare --mount (CAP_SYS_ADMIN)"))
    struct UinputGrant {
        static let uinput = "/sys/devices/virtual/misc/uinput"
        static let grant = "setfacl -m g:motiond:rw /dev/uinput"
        static let revoke = "setfacl -x g:motiond /dev/uinput"

        /// A machine with `devices` and uinput. udev runs a rule's PROGRAM with the device's properties
        /// as its whole environment: umockdev's preload among uinput's, the rule's look at the other
        /// devices sees the testbed's /sys, as on a machine it sees the machine's (`udevTest` adds the
        /// two, which only the child knows). `locale`, if set, is its LC_ALL.
        static func machine(_ devices: String?, locale: String? = nil) throws -> ChildTestbed {
            try ChildTestbed(devices: (devices.map { $0 + "\n\n" } ?? "") + """
                P: /devices/virtual/misc/uinput
                N: uinput
                E: SUBSYSTEM=misc
                E: DEVNAME=/dev/uinput
                \(locale.map { "E: LC_ALL=\($0)\n" } ?? "")A: dev=10:223\\n

                """)
        }

        /// What `udevadm test` does with `syspath` under the rule, with `configuration` as
        /// /etc/motiond/motiond.conf (nil: none). In a mount namespace of its own, so that the host
        /// keeps its state: a tmpfs over /run/udev holding only this rule in rules.d (a udevd running on
        /// the host never sees it) and taking the database udevadm test writes (data, tags), a
        /// temporary directory over /etc/motiond. A mount point that is missing (the package not
        /// installed) is made for the run and removed after it. On `machine`'s devices, under umockdev-run.
        static func udevTest(_ syspath: String, on machine: ChildTestbed, configuration: String? = nil) async throws -> String {
            try await udevTest(syspath, on: machine, configurationBytes: configuration.map { Array($0.utf8) })
        }

        /// `udevTest(_:on:configuration:)` with a configuration of any bytes, UTF-8 or not.
        static func udevTest(_ syspath: String, on machine: ChildTestbed, configurationBytes configuration: [UInt8]?) async throws -> String {
            let etc = NSTemporaryDirectory() + "motiond-etc-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            try FileManager.default.createDirectory(atPath: etc, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: etc) }
            if let configuration { try Data(configuration).write(to: URL(fileURLWithPath: etc + "/motiond.conf")) }
            let rule = InstallTests.root + "/udev-rules/70-motiond.rules"
            // uinput's properties get umockdev's preload and the testbed's root first: umockdev-run made
            // the testbed, so only its child knows where it is.
            let script = """
                printf 'LD_PRELOAD=%s\\nUMOCKDEV_DIR=%s\\n' "$LD_PRELOAD" "$UMOCKDEV_DIR" >> \(uinput)/uevent \
                && mount -t tmpfs motiond-test /run/udev && mkdir /run/udev/rules.d && cp "$0" /run/udev/rules.d/ && mount --bind "$1" /etc/motiond \
                && exec udevadm test --action=add "$2"
                """
            return try await withMountPoints(["/run/udev", "/etc/motiond"]) {
                let run = try await machine.run("unshare", ["--mount", "sh", "-c", script, rule, etc, syspath], directory: InstallTests.root)
                return run.output + run.errors
            }
        }

        /// Runs `body` with each of `paths` a directory: those missing (and their missing parents) are
        /// made before and removed after, only if still empty.
        static func withMountPoints<T>(_ paths: [String], _ body: () async throws -> T) async throws -> T {
            var made: [String] = []
            defer { for path in made.reversed() { rmdir(path) } }
            for path in paths {
                var missing: [String] = []
                var parent = path
                while !FileManager.default.fileExists(atPath: parent) {
                    missing.append(parent)
                    parent = (parent as NSString).deletingLastPathComponent
                }
                for directory in missing.reversed() {
                    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
                    made.append(directory)
                }
            }
            return try await body()
        }

        /// The programs the rule would run for the device (udevadm test lists them, runs none).
        static func runs(_ output: String) -> [String] {
            output.split(separator: "\n").filter { $0.hasPrefix("run: ") }.map(String.init)
        }

        /// An accelerometer, iio:device1 at `path`, with udev `properties` and sysfs `attributes`.
        static func accelerometer(_ path: String, name: String, properties: [String] = [], attributes: [String] = []) -> String {
            (["P: \(path)/iio:device1", "N: iio:device1", "E: SUBSYSTEM=iio", "E: DEVNAME=/dev/iio:device1"]
                + properties.map { "E: \($0)" } + (["dev=250:1", "name=\(name)"] + attributes + ["in_accel_x_raw=0"]).map { "A: \($0)\\n" })
                .joined(separator: "\n")
        }
        static let hwdbBase = accelerometer("/devices/platform/HID-SENSOR-200073.11.auto", name: "accel_3d", properties: ["ACCEL_LOCATION=base"])
        static let labelledBase = accelerometer("/devices/platform/i2c-1/1-0019", name: "bmc150_accel", attributes: ["label=accel-base"])
        /// The hwdb says display, the driver's label and location say base: motiond takes the hwdb's
        /// word (DeviceInspector: ACCEL_LOCATION, else the label, else location), so no base.
        static let hwdbDisplayLabelledBase = accelerometer(
            "/devices/platform/i2c-1/1-0019", name: "bmc150_accel", properties: ["ACCEL_LOCATION=display"], attributes: ["label=accel-base", "location=base"])

        /// A base accelerometer as the hwdb names it, as a cros-ec driver (location) and as a
        /// device-tree label name it: granted. A tablet with one accelerometer, and a machine with no
        /// IIO device: taken back (before: granted on every machine).
        @Test(arguments: [
            ("hwdb", true), ("cros-ec", true), ("label", true), ("tablet", false), ("none", false), ("hwdb display, label base", false),
        ])
        func uinputIsTheServicesOnlyWhereABaseAccelerometerIs(machine: String, granted: Bool) async throws {
            let devices: String? = switch machine {
            case "hwdb": Self.hwdbBase
            case "cros-ec": try Testbed.fixture("convertible-two-accelerometers")
            case "label": Self.labelledBase
            case "hwdb display, label base": Self.hwdbDisplayLabelledBase
            case "tablet": try Testbed.fixture("tablet-iio-sensor-proxy")
            default: nil
            }
            let output = try await Self.udevTest(Self.uinput, on: try Self.machine(devices))
            let runs = Self.runs(output)
            #expect(runs.contains { $0.contains(granted ? Self.grant : Self.revoke) }, "\(machine): \(runs) \(output.suffix(1500))")
            #expect(!runs.contains { $0.contains(granted ? Self.revoke : Self.grant) }, "\(machine): \(runs)")
        }

        /// motiond.conf setting `tablet_mode: off`, in any of the spellings libyaml reads as that
        /// (each checked with PyYAML's BaseLoader, which follows the same YAML 1.1 grammar: plainly,
        /// quoted, on the next line, tagged, through an alias, as a folded block, with an escape in the
        /// key, in a flow mapping after a quoted `#` or after a line that only looks like a comment,
        /// after a comment ended by a lone CR, set twice): withheld even on a convertible. Only no
        /// mention, or exactly `tablet_mode: auto` (quoted or not, a comment after it), grants it.
        /// The file is read as text whatever its bytes (issue 60 review, item 6): a line ending in a
        /// Latin-1 "é" (`latin1`, read in a UTF-8 locale) made grep -P take the file for binary and
        /// leave that line out, so `tablet_mode: off # café` granted uinput; it withholds, and the
        /// byte in a line that does not mention tablet_mode still grants.
        @Test(arguments: [
            ("tablet_mode: off\n", false), ("log_level: info\ntablet_mode: \"off\"\n", false), ("{'tablet_mode': off, log_level: info}\n", false),
            ("tablet_mode:\n  off\n", false), ("tablet_mode: !!str off\n", false), ("dbus: &a off\ntablet_mode: *a\n", false),
            ("tablet_mode: >-\n  off\n", false), ("\"tablet\\x5fmode\": off\n", false), ("{log_level: \"#\", tablet_mode: off}\n", false),
            ("{log_level: \"info\n#\", tablet_mode: off}\n", false), ("# a comment\rtablet_mode: off\n", false),
            ("tablet_mode: auto\ntablet_mode: off\n", false),
            ("tablet_mode: auto\n", true), ("\"tablet_mode\": 'auto'  # the default\n", true), ("# tablet_mode: off\nlog_level: info\n", true),
            ("log_level: info\n", true),
        ].map { ($0, false, $1) } + [("tablet_mode: off # caf", true, false), ("log_level: info # caf", true, true)])
        func tabletModeOffInMotiondConfWithholdsIt(configuration: String, latin1: Bool, granted: Bool) async throws {
            let machine = try Self.machine(try Testbed.fixture("convertible-two-accelerometers"), locale: latin1 ? "C.UTF-8" : nil)
            let bytes = Array(configuration.utf8) + (latin1 ? [0xE9, 0x0A] : [])
            let runs = Self.runs(try await Self.udevTest(Self.uinput, on: machine, configurationBytes: bytes))
            #expect(runs.contains { $0.contains(granted ? Self.grant : Self.revoke) }, "\(configuration)\(latin1 ? "é" : ""): \(runs)")
        }

        /// Applying the rule leaves the host as it was: no /etc/motiond made (it was left behind, empty,
        /// where the package is not installed), no rule left in /run/udev/rules.d.
        @Test func applyingTheRuleLeavesTheHostAsItWas() async throws {
            let paths = ["/etc/motiond", "/etc/motiond/motiond.conf", "/run/udev", "/run/udev/rules.d", "/run/udev/rules.d/70-motiond.rules"]
            func present() -> [String] { paths.filter { FileManager.default.fileExists(atPath: $0) } }
            let before = present()
            let machine = try Self.machine(try Testbed.fixture("convertible-two-accelerometers"))
            let runs = Self.runs(try await Self.udevTest(Self.uinput, on: machine, configuration: "tablet_mode: auto\n"))
            #expect(runs.contains { $0.contains(Self.grant) }, "\(runs)")
            #expect(present() == before, "before: \(before)")
        }

        /// Nor the host's udev database: `udevadm test` writes the device's entry (/run/udev/data,
        /// /run/udev/tags), and umockdev's preload redirects /sys and /dev, not /run. Left there, a
        /// testbed's entry is read for every later testbed's device of that name: the convertible's
        /// iio:device1 made the tablet fixture's light sensor `IIO_SENSOR_PROXY_TYPE=iio-poll-accel`,
        /// and iio-sensor-proxy found no light (Hardware.SensorProxyBridge).
        @Test func applyingTheRuleWritesNothingInTheHostsUdevDatabase() async throws {
            func database() -> [String: String] {
                var entries: [String: String] = [:]
                for directory in ["/run/udev/data", "/run/udev/tags"] {
                    entries[directory] = FileManager.default.fileExists(atPath: directory) ? "" : nil
                    for path in FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? [] {
                        entries[directory + "/" + path] = FileManager.default.contents(atPath: directory + "/" + path).map { String(decoding: $0, as: UTF8.self) } ?? ""
                    }
                }
                return entries
            }
            let before = database()
            let machine = try Self.machine(try Testbed.fixture("convertible-two-accelerometers"))
            _ = try await Self.udevTest("/sys/devices/platform/cros-ec-accel.1/iio:device1", on: machine)
            _ = try await Self.udevTest(Self.uinput, on: machine)
            #expect(database() == before)
        }

        /// A base accelerometer that appears after uinput has it decided again (a change event to
        /// uinput); the display's accelerometer does not.
        @Test func aBaseAccelerometerHasUinputDecidedAgain() async throws {
            let machine = try Self.machine(try Testbed.fixture("convertible-two-accelerometers"))
            let retrigger = "echo change > /sys/devices/virtual/misc/uinput/uevent"
            let base = Self.runs(try await Self.udevTest("/sys/devices/platform/cros-ec-accel.1/iio:device1", on: machine))
            #expect(base.contains { $0.contains(retrigger) }, "\(base)")
            let display = Self.runs(try await Self.udevTest("/sys/devices/platform/cros-ec-accel.0/iio:device0", on: machine))
            #expect(!display.contains { $0.contains(retrigger) }, "\(display)")
        }
    }
}
