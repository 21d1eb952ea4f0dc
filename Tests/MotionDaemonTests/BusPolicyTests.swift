import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The bus policy motiond installs (systemd/motiond-dbus.conf), on a bus with the system bus's own
/// default rules (read from Debian's /usr/share/dbus-1/system.conf: nobody owns a name or calls a
/// method unless a policy allows it). The processes run as real other users (setpriv).
@Suite struct BusPolicyTests {
    /// The repository's policy with motiond's user replaced by `daemon` (a user every Debian has; the
    /// `motiond` user exists only once motiond is installed).
    static func bus() throws -> PrivateSystemBus {
        let system = try String(contentsOfFile: "/usr/share/dbus-1/system.conf", encoding: .utf8)
        let start = try #require(system.range(of: #"<policy context="default">"#))
        let end = try #require(system.range(of: "</policy>", range: start.upperBound..<system.endIndex))
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../systemd/motiond-dbus.conf").standardized
        let policy = try String(contentsOf: root, encoding: .utf8).replacingOccurrences(of: #"<policy user="motiond">"#, with: #"<policy user="daemon">"#)
        #expect(policy.contains(#"<policy user="daemon">"#))
        let file = NSTemporaryDirectory() + "motiond-dbus-policy-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).conf"
        try policy.write(toFile: file, atomically: true, encoding: .utf8)
        let bus = try PrivateSystemBus(policy: String(system[start.lowerBound..<end.upperBound]) + "\n<include>\(file)</include>")
        // The user under test must reach the bus socket and run the daemon from here.
        chmod(bus.directory, 0o755)
        return bus
    }

    /// Runs `arguments` as `user` with no supplementary groups, outside any testbed.
    static func run(as user: String, _ arguments: [String], bus: PrivateSystemBus, timeLimit: Double = 20) async throws -> ProgramRun {
        try await runProgram(
            "setpriv", ["--reuid=\(user)", "--regid=\(user == "nobody" ? "nogroup" : user)", "--clear-groups"] + arguments,
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address, "LD_PRELOAD": "", "UMOCKDEV_DIR": ""], timeLimit: timeLimit)
    }

    /// motiond's binary where other users may run it (the build directory may be root's alone).
    static func daemonBinary(in bus: PrivateSystemBus) throws -> String {
        let built = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("motiond").path
        let copy = bus.directory + "/motiond"
        try FileManager.default.copyItem(atPath: built, toPath: copy)
        return copy
    }

    @Test func onlyMotiondsUserMayOwnTheNameAndAnyoneMayCallIt() async throws {
        let bus = try Self.bus()
        let motiond = try Self.daemonBinary(in: bus)
        let configuration = bus.directory + "/motiond.conf"
        _ = FileManager.default.createFile(atPath: configuration, contents: Data())
        /// A directory of the user's own for the socket and the state.
        func arguments(_ user: String) throws -> [String] {
            let home = bus.directory + "/" + user
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            let account = try #require(getpwnam(user))
            chown(home, account.pointee.pw_uid, account.pointee.pw_gid)
            return [motiond, "--dbus", "--config", configuration, "--socket", home + "/motiond.sock", "--state-directory", home + "/state"]
        }

        // An unprivileged user is refused the name, and says why.
        let refused = try await Self.run(as: "nobody", try arguments("nobody"), bus: bus)
        #expect(refused.status != 0)
        #expect(refused.errors.contains("sd_bus_request_name failed (Permission denied)"), "\(refused.errors)")

        // motiond's user gets it (the same binary, the same bus: the policy is what differs).
        let owner = Process()
        owner.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        owner.arguments = ["--reuid=daemon", "--regid=daemon", "--clear-groups"] + (try arguments("daemon"))
        owner.environment = ["DBUS_SYSTEM_BUS_ADDRESS": bus.address]
        owner.standardError = FileHandle.nullDevice
        try owner.run()
        defer { kill(owner.processIdentifier, SIGKILL) }
        try waitUntil(seconds: 10) {
            (try? bus.gdbus(["call", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus", "--method",
                             "org.freedesktop.DBus.NameHasOwner", "net.hadess.SensorProxy"]))?.contains("true") == true
        }

        // Anyone may call the main interface; the compass is GeoClue's alone.
        let main = try await Self.run(as: "nobody", ["gdbus", "call", "--system", "--dest", "net.hadess.SensorProxy", "--object-path", "/net/hadess/SensorProxy",
                                                     "--method", "net.hadess.SensorProxy.ClaimAccelerometer"], bus: bus)
        #expect(main.status == 0 && main.output.contains("()"), "\(main.output) \(main.errors)")
        let compass = try await Self.run(as: "nobody", ["gdbus", "call", "--system", "--dest", "net.hadess.SensorProxy", "--object-path", "/net/hadess/SensorProxy/Compass",
                                                        "--method", "net.hadess.SensorProxy.Compass.ClaimCompass"], bus: bus)
        #expect(compass.status != 0 && compass.errors.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(compass.output) \(compass.errors)")
    }
}

/// Claims ask polkit for `net.hadess.SensorProxy.claim-sensor` where polkit is there: the real
/// polkitd on the private bus, with motiond's action file and a rule that refuses `nobody`. Both are
/// put in polkit's system directories for the test (it reads no others) and removed after it; the
/// rule names only this action and that user.
@Suite(.serialized) struct PolkitTests {
    @Test func aClaimPolkitRefusesIsRefusedAndOneItAllowsIsServed() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/lib/polkit-1/polkitd") else {
            Issue.record("polkitd is not installed (Debian package polkitd; .ci/run installs it)")
            return
        }
        let action = "/usr/share/polkit-1/actions/net.hadess.SensorProxy.motiond.policy"
        let rule = "/etc/polkit-1/rules.d/49-motiond-test-\(getpid()).rules"
        let policy = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../systemd/net.hadess.SensorProxy.motiond.policy").standardized
        let installedBefore = FileManager.default.fileExists(atPath: action)
        if !installedBefore { try FileManager.default.copyItem(atPath: policy.path, toPath: action) }
        try """
            polkit.addRule(function(action, subject) {
                if (action.id == "net.hadess.SensorProxy.claim-sensor" && subject.user == "nobody") return polkit.Result.NO;
            });
            """.write(toFile: rule, atomically: true, encoding: .utf8)
        defer {
            try? FileManager.default.removeItem(atPath: rule)
            if !installedBefore { try? FileManager.default.removeItem(atPath: action) }
        }
        let testbed = try Testbed()
        try testbed.add(Testbed.fixture("tablet-iio-sensor-proxy").components(separatedBy: "\n\n")[0])
        let bus = try PrivateSystemBus()
        chmod(bus.directory, 0o755)
        let polkit = try Peer("/usr/lib/polkit-1/polkitd", arguments: ["--no-debug"], bus: bus)
        try waitUntil(seconds: 10) {
            (try? bus.gdbus(["call", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus", "--method",
                             "org.freedesktop.DBus.NameHasOwner", "org.freedesktop.PolicyKit1"]))?.contains("true") == true
        }
        let daemon = try Hardware.SensorProxyBridge.daemon(on: bus)
        let client = try BusClient(address: bus.address)
        try client.call("ClaimAccelerometer")  // root: allowed by the action's defaults
        #expect(try client.property("AccelerometerOrientation") == "normal")
        let refused = try await BusPolicyTests.run(as: "nobody", ["gdbus", "call", "--system", "--dest", "net.hadess.SensorProxy", "--object-path",
                                                                   "/net/hadess/SensorProxy", "--method", "net.hadess.SensorProxy.ClaimLight"], bus: bus)
        #expect(refused.errors.contains("org.freedesktop.DBus.Error.AccessDenied: polkit does not allow net.hadess.SensorProxy.claim-sensor"),
                "\(refused.output) \(refused.errors)")
        _ = (daemon, polkit)
    }
}
