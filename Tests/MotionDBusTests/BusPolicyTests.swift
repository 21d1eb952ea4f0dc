import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The bus policy motiond installs (systemd/motiond-dbus.conf), on a bus with the system bus's own
/// default rules (read from Debian's /usr/share/dbus-1/system.conf: nobody owns a name or calls a
/// method unless a policy allows it). The processes run as real other users (setpriv).
@Suite(.onOwnThreads) struct BusPolicyTests {
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
    /// The limits only bound a hang: at the full suite's start on two cores, a step of these tests
    /// (a debug motiond or gdbus started as another user) took up to 20 s, against 0.3 s alone.
    static func run(as user: String, _ arguments: [String], bus: PrivateSystemBus, timeLimit: Double = 90) async throws -> ProgramRun {
        try await runProgram(
            "setpriv", ["--reuid=\(user)", "--regid=\(user == "nobody" ? "nogroup" : user)", "--clear-groups"] + arguments,
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address, "LD_PRELOAD": "", "UMOCKDEV_DIR": ""], timeLimit: timeLimit)
    }

    /// motiond run as `user` (no supplementary groups, outside any testbed) with D-Bus on, from a
    /// copy of the binary other users may run (the build directory may be root's alone), its socket
    /// and state in a directory of the user's own.
    static func daemonCommand(as user: String, bus: PrivateSystemBus) throws -> [String] {
        let binary = bus.directory + "/motiond"
        if !FileManager.default.fileExists(atPath: binary) {
            let built = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("motiond").path
            try copyExecutable(from: built, to: binary)
            _ = FileManager.default.createFile(atPath: bus.directory + "/motiond.conf", contents: Data())
        }
        let home = bus.directory + "/" + user
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let account = try #require(getpwnam(user))
        chown(home, account.pointee.pw_uid, account.pointee.pw_gid)
        return [binary, "--dbus", "--config", bus.directory + "/motiond.conf", "--socket", home + "/motiond.sock", "--state-directory", home + "/state"]
    }

    /// Starts motiond as `user` and waits until it owns the name; killed when the process is released.
    static func startDaemon(as user: String, bus: PrivateSystemBus) throws -> Process {
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        daemon.arguments = ["--reuid=\(user)", "--regid=\(user)", "--clear-groups"] + (try daemonCommand(as: user, bus: bus))
        daemon.environment = ["DBUS_SYSTEM_BUS_ADDRESS": bus.address]
        daemon.standardError = FileHandle.nullDevice
        try daemon.runWithSteadyEnvironment()
        try waitUntil(seconds: 60) { bus.hasOwner("net.hadess.SensorProxy") }
        return daemon
    }

    @Test func onlyMotiondsUserMayOwnTheNameAndAnyoneMayCallIt() async throws {
        let bus = try Self.bus()
        // An unprivileged user is refused the name, and says why.
        let refused = try await Self.run(as: "nobody", try Self.daemonCommand(as: "nobody", bus: bus), bus: bus)
        #expect(refused.status != 0)
        #expect(refused.errors.contains("sd_bus_request_name net.hadess.SensorProxy failed (Permission denied)"), "\(refused.errors)")

        // motiond's user gets it (the same binary, the same bus: the policy is what differs).
        let owner = try Self.startDaemon(as: "daemon", bus: bus)
        defer { kill(owner.processIdentifier, SIGKILL) }

        // Anyone may call the main interface; the compass is GeoClue's alone.
        let main = try await Self.run(as: "nobody", ["gdbus", "call", "--system", "--dest", "net.hadess.SensorProxy", "--object-path", "/net/hadess/SensorProxy",
                                                     "--method", "net.hadess.SensorProxy.ClaimAccelerometer"], bus: bus)
        #expect(main.status == 0 && main.output.contains("()"), "\(main.output) \(main.errors)")
        // motiond's posture beside it too (this machine has no hinge: the claim returns at once).
        let posture = try await Self.run(as: "nobody", ["gdbus", "call", "--system", "--dest", "net.hadess.SensorProxy", "--object-path", "/net/hadess/SensorProxy",
                                                        "--method", "io.github.motiond.Posture.ClaimPosture"], bus: bus)
        #expect(posture.status == 0 && posture.output.contains("()"), "\(posture.output) \(posture.errors)")
        // And motiond's presence (no presence or proximity sensor here: the claim returns at once).
        let presence = try await Self.run(as: "nobody", ["gdbus", "call", "--system", "--dest", "net.hadess.SensorProxy", "--object-path", "/net/hadess/SensorProxy",
                                                         "--method", "io.github.motiond.Presence.ClaimPresence"], bus: bus)
        #expect(presence.status == 0 && presence.output.contains("()"), "\(presence.output) \(presence.errors)")
        let compass = try await Self.run(as: "nobody", ["gdbus", "call", "--system", "--dest", "net.hadess.SensorProxy", "--object-path", "/net/hadess/SensorProxy/Compass",
                                                        "--method", "net.hadess.SensorProxy.Compass.ClaimCompass"], bus: bus)
        #expect(compass.status != 0 && compass.errors.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(compass.output) \(compass.errors)")
    }
}

/// Claims ask polkit for `net.hadess.SensorProxy.claim-sensor` where polkit is there: the real
/// polkitd on the private bus, motiond running as its own (non-root) user as installed, the action
/// file as installed but for its owner (`daemon` standing for `motiond`), and a rule that refuses
/// `nobody`. Both files go in polkit's system directories for the test (it reads no others) and are
/// removed after it; they name only this test's action file and that user.
@Suite(.serialized, .onOwnThreads) struct PolkitTests {
    @Test func aClaimPolkitRefusesIsRefusedAndOneItAllowsIsServed() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/lib/polkit-1/polkitd") else {
            Issue.record("polkitd is not installed (Debian package polkitd; scripts/install-debian-packages --tests installs it)")
            return
        }
        let action = "/usr/share/polkit-1/actions/net.hadess.SensorProxy.motiond-test-\(getpid()).policy"
        let rule = "/etc/polkit-1/rules.d/49-motiond-test-\(getpid()).rules"
        let installed = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../systemd/net.hadess.SensorProxy.motiond.policy").standardized
        let policy = try String(contentsOf: installed, encoding: .utf8)
        #expect(policy.contains("unix-user:motiond"), "motiond, not root, asks polkit: the action names it its owner")
        try policy.replacingOccurrences(of: "unix-user:motiond", with: "unix-user:daemon").write(toFile: action, atomically: true, encoding: .utf8)
        try """
            polkit.addRule(function(action, subject) {
                if (action.id == "net.hadess.SensorProxy.claim-sensor" && subject.user == "nobody") return polkit.Result.NO;
            });
            """.write(toFile: rule, atomically: true, encoding: .utf8)
        defer {
            try? FileManager.default.removeItem(atPath: rule)
            try? FileManager.default.removeItem(atPath: action)
        }
        let bus = try PrivateSystemBus()
        chmod(bus.directory, 0o755)
        let polkit = try Peer("/usr/lib/polkit-1/polkitd", arguments: ["--no-debug"], bus: bus)
        try waitUntil(seconds: 60) { bus.hasOwner("org.freedesktop.PolicyKit1") }
        let daemon = try BusPolicyTests.startDaemon(as: "daemon", bus: bus)
        defer { kill(daemon.processIdentifier, SIGKILL) }
        // This machine has no accelerometer: a granted claim returns at once.
        let client = try BusClient(address: bus.address)
        try client.call("ClaimAccelerometer")  // root: allowed by the action's defaults
        let refused = try await BusPolicyTests.run(as: "nobody", ["gdbus", "call", "--system", "--dest", "net.hadess.SensorProxy", "--object-path",
                                                                   "/net/hadess/SensorProxy", "--method", "net.hadess.SensorProxy.ClaimLight"], bus: bus)
        #expect(refused.errors.contains("org.freedesktop.DBus.Error.AccessDenied: polkit does not allow net.hadess.SensorProxy.claim-sensor"),
                "\(refused.output) \(refused.errors)")
        // The posture's claim asks for the same action.
        let posture = try await BusPolicyTests.run(as: "nobody", ["gdbus", "call", "--system", "--dest", "net.hadess.SensorProxy", "--object-path",
                                                                   "/net/hadess/SensorProxy", "--method", "io.github.motiond.Posture.ClaimPosture"], bus: bus)
        #expect(posture.errors.contains("org.freedesktop.DBus.Error.AccessDenied: polkit does not allow net.hadess.SensorProxy.claim-sensor"),
                "\(posture.output) \(posture.errors)")
        // And the presence's.
        let presence = try await BusPolicyTests.run(as: "nobody", ["gdbus", "call", "--system", "--dest", "net.hadess.SensorProxy", "--object-path",
                                                                    "/net/hadess/SensorProxy", "--method", "io.github.motiond.Presence.ClaimPresence"], bus: bus)
        #expect(presence.errors.contains("org.freedesktop.DBus.Error.AccessDenied: polkit does not allow net.hadess.SensorProxy.claim-sensor"),
                "\(presence.output) \(presence.errors)")
        _ = polkit
    }
}
