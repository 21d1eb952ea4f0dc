import Foundation
import MotionClient
import Testing
import TestSupport

/// motionctl's commands that talk to motiond, run as a user runs them, against a replaying daemon.
@Suite(.serialized, .onOwnThreads) struct ClientCommandTests {
    func motionctl(_ arguments: [String], socket: String? = nil, asNobody: Bool = false) async throws -> ProgramRun {
        let executable = ReplayDaemon.products.appendingPathComponent("motionctl").path
        let environment = ["MOTIOND_SOCKET": socket ?? NSTemporaryDirectory() + "motionctl-test-no-daemon.sock"]
        // As nobody: a user outside the socket's group (the tests run as root, who may connect anywhere).
        return asNobody
            ? try await runProgram("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", executable] + arguments, environment: environment)
            : try await runProgram(executable, arguments, environment: environment)
    }

    @Test(arguments: ["watch", "get", "devices", "status", "calibrate", "record", "fuse", "view"])
    func everyCommandExplainsItself(command: String) async throws {
        let run = try await motionctl([command, "--help"])
        #expect(run.status == 0)
        #expect(run.output.contains("USAGE: motionctl \(command)"), "\(run.output)")
    }

    @Test(arguments: [["watch", "--once"], ["get"], ["devices"], ["status"], ["record", NSTemporaryDirectory() + "never-written.motionrec"]])
    func withoutADaemonEachCommandSaysHowToStartOne(arguments: [String]) async throws {
        let run = try await motionctl(arguments)
        #expect(run.status == 69, "EX_UNAVAILABLE")
        #expect(run.errors.contains("motiond is not running") && run.errors.contains("systemctl start motiond"), "\(run.errors)")
    }

    @Test func aUserOutsideTheSocketsGroupIsToldWhichGroupToJoin() async throws {
        let daemon = try ReplayDaemon()  // its socket: root's, mode 0660
        let run = try await motionctl(["status"], socket: daemon.socket, asNobody: true)
        #expect(run.status == 77, "EX_NOPERM: \(run.errors)")
        #expect(run.errors.contains("usermod -aG motion"), "\(run.errors)")
    }

    @Test func getDevicesAndStatusPrintWhatTheDaemonSays() async throws {
        let daemon = try ReplayDaemon()
        let get = try await motionctl(["get", "--json", "motion", "magnetometer", "--frame", "xMagneticNorthZVertical"], socket: daemon.socket)
        #expect(get.status == 0, "\(get.errors)")
        // The protocol's own line, `class` included: a consumer tells the message by it.
        guard case .snapshot(let snapshot) = try AnyServerMessage(line: Array(get.output.utf8)) else {
            Issue.record("not a SNAPSHOT: \(get.output)")
            return
        }
        #expect(snapshot.motion?.frame == .xMagneticNorthZVertical && snapshot.magnetometer != nil)
        let devicesJSON = try await motionctl(["devices", "--json"], socket: daemon.socket)
        guard case .devices(let reply) = try AnyServerMessage(line: Array(devicesJSON.output.utf8)) else {
            Issue.record("not a DEVICES reply: \(devicesJSON.output)")
            return
        }
        #expect(reply.devices.map(\.device) == ["iio:device0"])

        let text = try await motionctl(["get"], socket: daemon.socket)
        #expect(text.output.contains("attitude") && text.output.contains("gravity"), "\(text.output)")

        let devices = try await motionctl(["devices"], socket: daemon.socket)
        #expect(devices.output.contains("iio:device0  myon aktos-t  [replayed]"), "\(devices.output)")
        #expect(devices.output.contains("kinds: accelerometer, gyroscope, magnetometer"))
        #expect(devices.output.contains("unavailable: hinge: hinge needs two accelerometers, one in the display and one in the base"), "\(devices.output)")

        let status = try await motionctl(["status"], socket: daemon.socket)
        #expect(status.output.contains("iio:device0: accelerometer, gyroscope, magnetometer [replayed]"), "\(status.output)")
        // A nine-axis recording gives all of motion; only the sensors it lacks are unavailable.
        #expect(status.output.contains("unavailable: proximity: proximity needs a sensor this machine does not have: proximity"), "\(status.output)")
        #expect(!status.output.contains("unavailable in motion"), "\(status.output)")
    }

    @Test func watchJSONPrintsOneLinePerUpdateAtTheInterval() async throws {
        let daemon = try ReplayDaemon()
        let process = Process()
        process.executableURL = ReplayDaemon.products.appendingPathComponent("motionctl")
        process.arguments = ["watch", "--json", "--stream", "gyroscope", "--interval", "0.05", "--socket", daemon.socket]
        let output = Pipe()
        process.standardOutput = output
        try process.runWithSteadyEnvironment()
        usleep(1_200_000)  // stays: the lines printed over 1.2 s are what is measured
        process.terminate()
        process.waitUntilExit()
        let lines = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n")
        // Each line is the protocol's GYROSCOPE message, `class` included.
        let stamps = try lines.compactMap { line -> Int64? in
            guard case .gyroscope(let message) = try AnyServerMessage(line: Array(line.utf8)) else {
                Issue.record("not a GYROSCOPE line: \(line)")
                return nil
            }
            return message.timestamp
        }
        #expect(stamps.count >= 15 && stamps.count <= 26, "about 20 updates in 1.2 s: \(stamps.count)")
        let mean = Double(stamps.last! - stamps.first!) / Double(stamps.count - 1) * 1e-9
        #expect(abs(mean - 0.05) < 0.005)
    }

    @Test func watchInATerminalRedrawsValuesThatChange() async throws {
        let daemon = try ReplayDaemon()
        let session = "motionctl-test-\(getpid())"
        let executable = ReplayDaemon.products.appendingPathComponent("motionctl").path
        // A tmux server of the test's own (-L), so that no user's sessions are touched.
        func tmux(_ arguments: [String]) async throws -> String { try await runProgram("/usr/bin/tmux", ["-L", session] + arguments).output }
        _ = try await tmux(["new-session", "-d", "-s", session, "-x", "120", "-y", "20", "\(executable) watch --socket \(daemon.socket)"])
        let attitude = { (screen: String) in screen.split(separator: "\n").first { $0.hasPrefix("attitude") } }
        // The pane once `drawn` holds for it, or the last one seen after 10 s (for the expectations to show).
        func screen(until drawn: (String) -> Bool) async throws -> String {
            let deadline = Date().addingTimeInterval(10)
            var screen = try await tmux(["capture-pane", "-p", "-t", session])
            while !drawn(screen) && Date() < deadline { screen = try await tmux(["capture-pane", "-p", "-t", session]) }
            return screen
        }
        let first: String, second: String
        do {
            // A view with its rate measured, then one whose values moved.
            first = try await screen { $0.hasPrefix("motiond   rate ") && $0.contains(" Hz") && attitude($0) != nil }
            second = try await screen { attitude($0) != attitude(first) }
        } catch {
            _ = try? await tmux(["kill-server"])
            throw error
        }
        _ = try await tmux(["kill-server"])
        for screen in [first, second] {
            #expect(screen.hasPrefix("motiond   rate "), "drawn in place from the top: \(screen)")
            #expect(screen.contains("attitude") && screen.contains("rotation rate") && screen.contains("orientation"))
            #expect(screen.components(separatedBy: "attitude").count == 2, "one view, not a scroll of them")
        }
        #expect(first.contains(" Hz") || second.contains(" Hz"), "the real rate is shown")
        #expect(attitude(first) != nil && attitude(first) != attitude(second), "the values change:\n\(first)\n\(second)")
    }

    @Test func aRecordingReplayedAndRecordedAgainHasTheSameSamplesBitForBit() async throws {
        // First recording: 1.5 s of the bundled one, every sample (the interval is below the sensor's period).
        let source = try ReplayDaemon()
        let directory = source.directory
        let first = try await motionctl(["record", directory + "/first.motionrec", "--interval", "0.001", "--duration", "1.5"], socket: source.socket)
        #expect(first.status == 0, "\(first.errors)")
        #expect(source.stop(), "motiond stops on SIGTERM")

        // Played once through (no loop), recorded again until the replay ends.
        let replay = try ReplayDaemon(recording: directory + "/first.motionrec", arguments: [])
        let second = try await motionctl(["record", directory + "/second.motionrec", "--interval", "0.001", "--duration", "10"], socket: replay.socket)
        #expect(second.status == 0, "\(second.errors)")
        #expect(second.errors.contains("recording ended"), "stopped by the end of the replay: \(second.errors)")

        let a = try Recording.read(path: directory + "/first.motionrec").samples
        let b = try Recording.read(path: directory + "/second.motionrec").samples
        #expect(a.count > 1000, "1.5 s × 285.7 Hz × 3 sensors: \(a.count)")
        #expect(a.count == b.count)
        // The replay stamps samples with the time it plays them: the same intervals, a new origin.
        let shift = (b.first?.timestamp ?? 0) - (a.first?.timestamp ?? 0)
        let differences = zip(a, b).filter { x, y in
            x.stream != y.stream || x.timestamp + shift != y.timestamp
                || x.vector.x.bitPattern != y.vector.x.bitPattern || x.vector.y.bitPattern != y.vector.y.bitPattern
                || x.vector.z.bitPattern != y.vector.z.bitPattern
        }
        #expect(differences.isEmpty, "\(differences.count) differ; the first: \(differences.prefix(2))")
    }
}
