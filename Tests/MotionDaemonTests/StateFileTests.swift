import Foundation
import HubTestKit
import Logging
import MotionWire
import TestSupport
import Testing

@testable import MotionDaemon

/// The whole daemon on state files that are not what it wrote (issue 40, defects 6 to 9): whatever
/// stands at `history.json` or `calibration.json`, it listens at once, in little memory, with the file
/// set aside and logged; what it kept it serves.
@Suite(.onOwnThreads) struct StateFileTests {
    /// The products' motiond, replaying the bundled recording, on a state directory that `prepare`
    /// filled; run as `nobody` when `asNobody` (with the directory theirs), to meet permissions that
    /// root's capabilities pass.
    final class Daemon {
        let process = Process()
        let directory = NSTemporaryDirectory() + "motiond-statefile-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        var state: String { directory + "/state" }
        var socket: String { directory + "/motiond.sock" }
        var log: String { (try? String(contentsOfFile: directory + "/motiond.log", encoding: .utf8)) ?? "" }

        init(asNobody: Bool = false, prepare: (String) throws -> Void) throws {
            try FileManager.default.createDirectory(atPath: directory + "/state", withIntermediateDirectories: true)
            try prepare(state)
            var motiond = ReplayDaemon.products.appendingPathComponent("motiond").path
            var recording = ReplayDaemon.bundledRecording
            if asNobody {
                // `nobody` may not reach the checkout (CI clones into a mktemp -d directory, mode 0700):
                // the executable and the recording go in the test's own directory (the executable
                // through `copyExecutable`, so that no other test's child holds it open for writing).
                try copyExecutable(from: motiond, to: directory + "/motiond")
                try FileManager.default.copyItem(atPath: recording, toPath: directory + "/recording.motionrec")
                (motiond, recording) = (directory + "/motiond", directory + "/recording.motionrec")
            }
            let arguments = ["--replay", recording, "--loop", "--socket", socket, "--state-directory", state, "--config", "/dev/null"]
            if asNobody {
                for path in [directory, state, motiond, recording] + (try FileManager.default.contentsOfDirectory(atPath: state).map { state + "/" + $0 }) {
                    #expect(lchown(path, 65534, 65534) == 0, "chown \(path)")
                }
                process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
                process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "--", motiond] + arguments
            } else {
                process.executableURL = URL(fileURLWithPath: motiond)
                process.arguments = arguments
            }
            _ = FileManager.default.createFile(atPath: directory + "/motiond.log", contents: nil)
            process.standardError = FileHandle(forWritingAtPath: directory + "/motiond.log")
            try process.runWithSteadyEnvironment()
        }

        deinit {
            stop()
            try? FileManager.default.removeItem(atPath: directory)
        }

        /// Waits up to 10 s for the socket to accept, failing at once if the daemon ends or passes 1 GB
        /// (the old daemon read /dev/zero until memory ran out).
        func waitUntilListening() throws {
            let deadline = Date().addingTimeInterval(10)
            while !ReplayDaemon.accepts(socket) {
                guard process.hasNotEnded, process.residentMegabytes < 1024, Date() < deadline else {
                    let rss = process.residentMegabytes
                    kill(process.processIdentifier, SIGKILL)
                    throw TestbedError("motiond is not listening after 10 s (RSS \(rss) MB): \(log)")
                }
                usleep(10_000)
            }
        }

        /// The most memory it has held, MB (`VmHWM`).
        var peakMegabytes: Double {
            guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
                let kilobytes = Double(line.split(separator: " ")[1])
            else { return 0 }
            return kilobytes / 1024
        }

        /// Stops it (SIGTERM) and waits for it to end; `false` if it had to be killed.
        @discardableResult
        func stop() -> Bool {
            guard process.hasNotEnded else { return true }
            kill(process.processIdentifier, SIGTERM)
            return process.waitUntilEnded(seconds: 10)
        }
    }

    /// What stands at both state files' paths.
    enum Intruder: String, CaseIterable {
        case fifo, linkToDevZero, sparseGigabyte

        func make(at path: String) throws {
            switch self {
            case .fifo: #expect(mkfifo(path, 0o600) == 0)
            case .linkToDevZero: #expect(symlink("/dev/zero", path) == 0)
            case .sparseGigabyte:
                let fd = open(path, O_CREAT | O_WRONLY, 0o600)
                defer { close(fd) }
                #expect(ftruncate(fd, 1 << 30) == 0)
            }
        }
    }

    /// Defect 8: a FIFO blocked the start with nothing logged; a link to /dev/zero grew past 6 GB and
    /// never listened; a sparse 1 GB file peaked at 2 GB. Each is set aside unread, logged, and the
    /// daemon listens in the memory it needs.
    @Test(arguments: Intruder.allCases)
    func aStateFileThatIsNoRegularFileOrTooLargeIsSetAsideAndTheDaemonListens(intruder: Intruder) throws {
        let daemon = try Daemon { state in
            for name in ["history.json", "calibration.json"] { try intruder.make(at: state + "/" + name) }
        }
        try daemon.waitUntilListening()
        let peak = daemon.peakMegabytes
        print("\(intruder): listening; peak RSS \(peak) MB")
        #expect(peak < 100, "peak RSS \(peak) MB")
        for name in ["history.json", "calibration.json"] {
            let path = daemon.state + "/" + name
            #expect(daemon.log.contains("\(path) ") && daemon.log.contains("kept as \(path).corrupt"), "\(daemon.log)")
            var status = stat()
            #expect(lstat(path + ".corrupt", &status) == 0, "\(name) set aside")
        }
        #expect(daemon.stop(), "stops at SIGTERM")
    }

    /// Defect 6, with a real EACCES: the daemon runs as `nobody`, and both state files are theirs with
    /// mode 000 (root, whom the tests run as, is not stopped by permissions; `nobody` has no capability
    /// that passes them). The history was overwritten at the first save; both are set aside whole.
    @Test func unreadableStateFilesAreSetAsideWholeAndTheLogSaysWhy() throws {
        let saved = [
            "history.json": #"{"version":1,"totalSteps":141,"minutes":[[29926080,141]],"activities":[]}"#,
            "calibration.json": #"{"gyroscopeBias":{"x":0.01,"y":0,"z":0}}"#,
        ]
        // setpriv execs the copied motiond: started again if that found it busy (`retryingBusyText`).
        let daemon = try retryingBusyText {
            let daemon = try Daemon(asNobody: true) { state in
                for (name, text) in saved {
                    try Data(text.utf8).write(to: URL(fileURLWithPath: state + "/" + name))
                    #expect(chmod(state + "/" + name, 0) == 0)
                }
            }
            try daemon.waitUntilListening()
            return daemon
        }
        #expect(daemon.stop())
        for (name, text) in saved {
            let path = daemon.state + "/" + name
            #expect(try String(contentsOfFile: path + ".corrupt", encoding: .utf8) == text, "kept whole")
            #expect(daemon.log.contains("\(path) cannot be read: EACCES") && daemon.log.contains("kept as \(path).corrupt"), "\(daemon.log)")
        }
    }
}

/// The step history kept across a save and a restart, on a server in this process whose IMU is the
/// hub test kit's (`Machines.imu`, the imu-buffered fixture's bmi160, giving the scans the test
/// feeds it): no umockdev, so these run beside the `Hardware` suite.
extension StateFileTests {
    /// The kit's IMU and a state directory (removed by the caller) holding `history` as history.json.
    static func imuAndStateDirectory(history: String) throws -> (ScriptedSource, String) {
        let source = ScriptedSource(devices: [Machines.imu])
        let state = NSTemporaryDirectory() + "motiond-state-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try Data(history.utf8).write(to: URL(fileURLWithPath: state + "/history.json"))
        return (source, state)
    }

    /// Watches `pedometer` (its first count `counted`), feeds `scans` once the accelerometer runs,
    /// and returns the count once it reaches `counted + walked` (or the last one within 5 s of it).
    static func walk(
        _ scans: [(counts: [Int], time: Int64)], on source: ScriptedSource, watchedBy client: TestClient, counted: Int, walked: Int
    ) throws -> Int {
        try client.send(#"{"class":"WATCH","streams":["pedometer"]}"#)
        _ = try client.next("WATCHING")
        #expect(try client.decode(PedometerMessage.self, try client.next("PEDOMETER")).steps == counted)
        try waitUntil { source.running(Machines.imu.number) != nil }
        try feed(scans, to: source)
        var steps = counted
        while steps < counted + walked, let line = try? client.next(seconds: 5) {
            if case .pedometer(let m) = try AnyServerMessage(line: Array(line.utf8)) { steps = m.steps }
        }
        return steps
    }

    /// Defect 9: a clock two days behind at start dropped 100 of 141 steps (those stamped after its
    /// now) from HISTORY, and the next save erased them. Here the minutes are written two days after
    /// the real clock, which is the daemon's view of a clock two days behind: they are answered (as
    /// now), kept through a save after a walk, and served again after a restart.
    @Test func minutesStampedAfterNowAreServedAndOutliveASaveAndARestart() async throws {
        let now = Date().timeIntervalSince1970
        let (hourAgo, twoDaysOn) = (Int64(now / 60) - 60, Int64(now / 60) + 2 * 1440)
        let (source, state) = try Self.imuAndStateDirectory(
            history: #"{"version":1,"totalSteps":141,"minutes":[[\#(hourAgo),41],[\#(twoDaysOn),60],[\#(twoDaysOn + 1),40]],"activities":[]}"#)
        defer { try? FileManager.default.removeItem(atPath: state) }
        let day = #"{"class":"HISTORY","id":1,"stream":"pedometer","from":\#(now - 86_400)}"#

        let scans = Self.walkScans(seconds: 20, from: Int64(ProcessInfo.processInfo.systemUptime * 1e9) - 20_000_000_000)
        let walked = Self.stepsCounted(in: scans)
        let first = MotionServer(socketPath: temporarySocketPath(), stateDirectory: state, source: source)
        try await first.start()
        try await first.whileServing {
            let client = try TestClient.greeted(path: first.socketPath)
            try client.send(day)
            #expect(try client.decode(HistoryReply.self, try client.next("HISTORY")).steps == 141, "every step of the total")
            #expect(try Self.walk(scans, on: source, watchedBy: client, counted: 141, walked: walked) == 141 + walked)
        }
        // Saved at the stop, after the walk: the minutes after now are in the file still.
        let saved = try String(contentsOfFile: state + "/history.json", encoding: .utf8).filter { !$0.isWhitespace }
        #expect(saved.contains("[\(twoDaysOn),60]") && saved.contains("[\(twoDaysOn + 1),40]"), "\(saved)")

        let second = MotionServer(socketPath: temporarySocketPath(), stateDirectory: state, source: source)
        try await second.start()
        try await second.whileServing {
            let client = try TestClient.greeted(path: second.socketPath)
            try client.send(day)
            #expect(try client.decode(HistoryReply.self, try client.next("HISTORY")).steps == 141 + walked)
        }
    }

    /// Defect 7: a `totalSteps` near `Int.max` crashed the daemon at the next step, and at every
    /// restart. The file is set aside, logged, and a walk is counted from 0.
    @Test func aTotalNoOneCouldWalkIsSetAsideAndTheNextStepsAreCounted() async throws {
        let file = #"{"version":1,"totalSteps":9223372036854775800,"minutes":[],"activities":[]}"#
        let (source, state) = try Self.imuAndStateDirectory(history: file)
        defer { try? FileManager.default.removeItem(atPath: state) }
        let log = MessageLog()
        let server = MotionServer(socketPath: temporarySocketPath(), stateDirectory: state, source: source, logger: Logger(label: "test") { _ in log })
        try await server.start()
        let scans = Self.walkScans(seconds: 20, from: 1_000_000_000)
        let walked = Self.stepsCounted(in: scans)
        try await server.whileServing {
            #expect(log.contains("saved step history set aside, starting afresh", about: "totalSteps 9223372036854775800 is outside 0...19723500000"))
            let client = try TestClient.greeted(path: server.socketPath)
            #expect(try Self.walk(scans, on: source, watchedBy: client, counted: 0, walked: walked) == walked)
        }
        #expect(try String(contentsOfFile: state + "/history.json.corrupt", encoding: .utf8) == file)
    }
}
