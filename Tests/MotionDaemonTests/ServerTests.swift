import Foundation
import HubTestKit
import Logging
import MotionCore
import MotionFusion
import MotionWire
import TestSupport
import Synchronization
import Testing

@testable import MotionDaemon
import MotionDevices
@testable import MotionHub

extension Hardware {
    /// The daemon end to end on a umockdev IMU, where the device layer's kernel interface is part of
    /// what is checked (the buffer enabled while someone listens, its watermark, the device put back
    /// at a stop): the server on a real Unix socket, a client speaking JSON lines. The rest of the
    /// daemon's end-to-end checks are `ServerWithoutTestbed`'s, beside this suite.
    @Suite struct Server {
        static func socketPath() -> String { temporarySocketPath() }

        /// A testbed with the buffered IMU fixture and a started in-process server on a fresh socket.
        static func startServerOnIMU(logger: Logger = Logger(label: "motiond")) async throws -> (Testbed, MotionServer) {
            let testbed = try Testbed()
            try testbed.add(fixture: "imu-buffered")
            let server = MotionServer(socketPath: socketPath(), logger: logger)
            try await server.start()
            return (testbed, server)
        }

        @Test func greetingDevicesErrorsWatchPollAndStatus() async throws {
            let (testbed, server) = try await Self.startServerOnIMU()
            try await server.whileServing {
                let client = try TestClient(path: server.socketPath)
                let version = try client.decode(Version.self, try client.next("VERSION"))
                #expect(version.protoMajor == ProtocolVersion.major)

                try client.send(#"{"class":"DEVICES","id":1}"#)
                let devices = try client.decode(DevicesReply.self, try client.next("DEVICES"))
                #expect(devices.id == .integer(1))
                #expect(devices.devices.map(\.device) == ["iio:device0"])
                #expect(devices.devices.first?.kinds == [.accelerometer, .gyroscope])
                #expect(devices.devices.first?.mode == "buffered")

                // Bad lines get errors and the connection survives.
                try client.send("not json")
                #expect(try client.decode(ErrorReply.self, try client.next("ERROR")).code == .malformed)
                try client.send(String(repeating: "x", count: 10_000))
                #expect(try client.decode(ErrorReply.self, try client.next("ERROR")).code == .tooLong)
                try client.send(#"{"class":"WATCH","id":2,"streams":["magnetometer"]}"#)
                #expect(try client.decode(ErrorReply.self, try client.next("ERROR")).code == .unavailable)

                // Nobody watches yet: the sensor is closed.
                #expect(try testbed.attribute("iio:device0", "buffer/enable").hasPrefix("0"))

                try client.send(#"{"class":"WATCH","id":3,"streams":["motion","accelerometer"],"interval":0.02}"#)
                let watching = try client.decode(Watching.self, try client.next("WATCHING"))
                #expect(watching.id == .integer(3))
                #expect(Set(watching.streams.map(\.stream)) == [.motion, .accelerometer])
                try waitUntil { (try? testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("1") == true }

                // 100 Hz scans, lying face up and still, for one second.
                var scans: [UInt8] = []
                for i in 0..<100 { scans += Testbed.imuScan(accelerometer: [0, 0, 16384], gyroscope: [0, 0, 0], time: 1_000_000_000 + Int64(i) * 10_000_000) }
                try testbed.feed("/dev/iio:device0", scans)
                var motions: [MotionMessage] = []
                while motions.count < 40 { motions.append(try client.decode(MotionMessage.self, try client.next("MOTION"))) }
                // Every 20 ms on the sample clock, from 100 Hz samples.
                let gaps = zip(motions.dropFirst(), motions).map { $0.timestamp - $1.timestamp }
                #expect(gaps.allSatisfy { $0 == 20_000_000 }, "\(motions.map(\.timestamp))")
                let last = try #require(motions.last)
                #expect(abs(last.gravity.z + 1) < 0.01, "face up: gravity (0, 0, −1) g")
                #expect(last.userAcceleration.length < 0.01)

                try client.send(#"{"class":"POLL","id":4,"streams":["accelerometer","motion"]}"#)
                let snapshot = try client.decode(Snapshot.self, try client.next("SNAPSHOT"))
                #expect(snapshot.id == .integer(4))
                #expect(abs((snapshot.accelerometer?.acceleration.z ?? 0) + 0.9990) < 0.001, "16384 × 0.000598 m/s² = 0.999 g, CoreMotion's sign")
                #expect(snapshot.motion != nil)

                try client.send(#"{"class":"STATUS","id":5}"#)
                let status = try client.decode(StatusReply.self, try client.next("STATUS"))
                #expect(status.clients == 1)
                #expect(status.sensors.map(\.device) == ["iio:device0"])
                #expect(status.sensors.first?.mode == "buffered")
                #expect(abs((status.sensors.first?.measuredRate ?? 0) - 100) < 1, "the rate measured on the timestamps")

                try client.send(#"{"class":"WATCH","id":6,"enable":false}"#)
                #expect(try client.decode(Watching.self, try client.next("WATCHING")).streams.isEmpty)
                // Closed once the poll's linger (5 s after the poll) is over.
                try waitUntil(seconds: 10) { (try? testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("0") == true }
            }
        }

        /// A client that lets its samples wait 100 ms gets every sample, each with its own timestamp;
        /// the IIO buffer's watermark (libiio sets it from the batch) is then the 10 scans of 100 ms at
        /// 100 Hz, so the kernel wakes the daemon once per 10 scans. A second client that waits for
        /// nothing brings it back to 1: a sensor batches only as far as all its clients let it.
        @Test func aLatencyBatchesTheBufferAndLosesNoSample() async throws {
            let (testbed, server) = try await Self.startServerOnIMU()
            try await server.whileServing {
                let patient = try TestClient.greeted(path: server.socketPath)
                // Both sensors of the IMU, so that the scans enabled are the fixture's 24-byte ones.
                try patient.send(#"{"class":"WATCH","streams":["accelerometer","gyroscope"],"interval":0.01,"latency":0.1}"#)
                let watching = try patient.decode(Watching.self, try patient.next("WATCHING"))
                #expect(watching.streams.first?.latency == 0.1)
                try waitUntil { (try? testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("1") == true }
                #expect(try Self.watermark(testbed) == 10)

                var scans: [UInt8] = []
                let times = (0..<10).map { 2_000_000_000 + Int64($0) * 10_000_000 }
                for (i, time) in times.enumerated() { scans += Testbed.imuScan(accelerometer: [0, 0, 16384], gyroscope: [i, 0, 0], time: time) }
                try testbed.feed("/dev/iio:device0", scans)
                var received: [GyroscopeMessage] = []
                while received.count < 10 { received.append(try patient.decode(GyroscopeMessage.self, try patient.next("GYROSCOPE"))) }
                #expect(received.map(\.timestamp) == times)

                let eager = try TestClient.greeted(path: server.socketPath)
                try eager.send(#"{"class":"WATCH","streams":["accelerometer"],"interval":0.01}"#)
                _ = try eager.next("WATCHING")
                try waitUntil { (try? Self.watermark(testbed)) == 1 }
            }
        }

        /// The IIO buffer's watermark, as libiio wrote it (it ends the number with a NUL, not a newline).
        static func watermark(_ testbed: Testbed) throws -> Int? {
            Int(try testbed.attribute("iio:device0", "buffer/watermark").trimmingCharacters(in: .whitespacesAndNewlines.union(["\0"])))
        }

        /// A stop that comes while a sensor is still being opened (off the loop) waits for the opening
        /// and closes it: the device is put back when `stop` returns, not left with its buffer enabled.
        @Test func aStopDuringASensorsOpeningLeavesItClosed() async throws {
            for _ in 0..<5 {
                let (testbed, server) = try await Self.startServerOnIMU()
                let client = try TestClient.greeted(path: server.socketPath)
                try client.send(#"{"class":"WATCH","streams":["gyroscope"],"interval":0.01}"#)
                _ = try client.next("WATCHING")
                try await server.stop()
                #expect(try testbed.attribute("iio:device0", "buffer/enable").hasPrefix("0"))
                #expect(try testbed.attribute("iio:device0", "current_timestamp_clock") == "realtime\n", "put back as it was")
            }
        }
    }
}

extension Hardware.Server {
    @Test func motiondStopsGracefullyOnSIGTERMClosingSensorsAndRemovingItsSocket() throws {
        let testbed = try Testbed()
        try testbed.add(fixture: "imu-buffered")
        let path = Self.socketPath()
        let daemon = try DaemonProcess(socket: path, arguments: ["--state-directory", NSTemporaryDirectory() + "motiond-state-\(getpid())"])
        let process = daemon.process
        let log = daemon.log

        let client = try TestClient.greeted(path: path)
        try client.send(#"{"class":"WATCH","streams":["gyroscope"],"interval":0.01}"#)
        _ = try client.next("WATCHING")
        try waitUntil { (try? testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("1") == true }

        daemon.signal(SIGTERM)
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        #expect(!FileManager.default.fileExists(atPath: path), "the socket file is removed")
        #expect(try testbed.attribute("iio:device0", "buffer/enable").hasPrefix("0"), "the sensor is closed")
        #expect(try testbed.attribute("iio:device0", "current_timestamp_clock") == "realtime\n", "and put back as it was")
        let messages = String(decoding: log.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(messages.contains("<6>listening"), "journald priority prefixes: \(messages)")
        #expect(messages.contains("<6>sensor opened"))
    }
}

/// The daemon end to end where no device of umockdev's is needed: its start and stop under systemd,
/// its configuration, its state file, its sleep at rest, a flooding client. Its motiond replays the
/// bundled recording (`--replay`), umockdev's preload and directory cleared, so it sees none of the
/// `Hardware` suite's testbeds and runs beside it; the waits on threads of their own.
@Suite(.onOwnThreads) struct ServerWithoutTestbed {
    /// What a daemon of this suite is given: the bundled recording's devices, and no umockdev.
    static let replay = ["--replay", ReplayDaemon.bundledRecording]
    static let noUmockdev = ["LD_PRELOAD": "", "UMOCKDEV_DIR": ""]

    /// The times the kernel switched to any of the process's threads so far (its wake-ups, and the
    /// switches a busy machine forced on it): the sum of each thread's `voluntary_ctxt_switches` and
    /// `nonvoluntary_ctxt_switches` in /proc/PID/task/TID/status (proc(5)).
    static func contextSwitches(of pid: Int32) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.reduce(0) { total, task in
            let status = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)) ?? ""
            return total + status.split(separator: "\n").filter { $0.contains("ctxt_switches:") }.compactMap { Int($0.split(separator: "\t").last ?? "") }.reduce(0, +)
        }
    }

    /// Nobody connected, no sensor open: the daemon sleeps, however often it saves while sensors run
    /// (a save every 20 ms here): its save timer used to run at rest too, waking it every interval.
    @Test func aDaemonNobodyUsesDoesNotWake() throws {
        let state = NSTemporaryDirectory() + "motiond-state-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let daemon = try DaemonProcess(
            socket: temporarySocketPath(), arguments: Self.replay + ["--state-directory", state, "--state-save-interval", "0.02"], environment: Self.noUmockdev)
        let pid = daemon.process.processIdentifier
        usleep(500_000)  // what the start-up and the test's own connection set going settles
        let before = Self.contextSwitches(of: pid)
        usleep(2_000_000)
        let woke = Self.contextSwitches(of: pid) - before
        #expect(woke <= 2, "\(woke) switches in 2 s at rest (measured 0; a save every 20 ms was 99)")
        daemon.signal(SIGTERM)
    }

    @Test func killingTheDaemonDuringStateWritesNeverLeavesABrokenFile() throws {
        let state = NSTemporaryDirectory() + "motiond-state-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        for round in 0..<4 {
            // Saves every 10 ms while data flows, killed with SIGKILL at a different moment each round.
            let daemon = try DaemonProcess(
                socket: temporarySocketPath(), arguments: Self.replay + ["--speed", "10", "--state-directory", state, "--state-save-interval", "0.01"],
                environment: Self.noUmockdev)
            let client = try TestClient.greeted(path: daemon.socket)
            try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.1}"#)
            _ = try client.next("WATCHING")
            _ = try client.next("MOTION")  // the fusion runs, and saves
            usleep(UInt32(20_000 + round * 7_000))
            // The last round dies after a save, whatever the load: the file's being whole is checked
            // at every moment, its existence once (a full run once killed all four before the first).
            if round == 3 { try waitUntil(seconds: 10) { FileManager.default.fileExists(atPath: state + "/calibration.json") } }
            daemon.signal(SIGKILL)
            // Whatever moment it died at, the state file is whole (or absent before the first save).
            if FileManager.default.fileExists(atPath: state + "/calibration.json") {
                #expect(throws: Never.self) { _ = try StateStore(directory: state).load(SensorFusion.Calibration.self) }
            }
        }
        #expect(FileManager.default.fileExists(atPath: state + "/calibration.json"), "saves happened")
    }

    @Test func systemdHearsReadyAndWatchdogTheSocketHasItsModeAndClientsAreLogged() throws {
        // A notify socket like systemd's: a datagram socket the test reads.
        let notifyPath = NSTemporaryDirectory() + "motiond-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        unlink(notifyPath)
        let notify = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(notify); unlink(notifyPath) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, b) in notifyPath.utf8.enumerated() { raw[i] = b } }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(notify, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        #expect(bound == 0)
        func message() -> String? {
            var pfd = pollfd(fd: notify, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 3000) > 0 else { return nil }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = recv(notify, &buffer, buffer.count, 0)
            return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : nil
        }

        let daemon = try DaemonProcess(
            socket: temporarySocketPath(), arguments: Self.replay + ["--socket-mode", "0640", "--socket-group", "daemon"],
            environment: Self.noUmockdev.merging(["NOTIFY_SOCKET": notifyPath, "WATCHDOG_USEC": "200000"]) { _, new in new })
        var messages: [String] = []
        while messages.count < 3, let m = message() { messages.append(m) }
        #expect(messages.first?.hasPrefix("READY=1\nSTATUS=") == true, "\(messages)")
        #expect(messages.dropFirst().allSatisfy { $0 == "WATCHDOG=1" } && messages.count == 3, "\(messages)")

        let attributes = try FileManager.default.attributesOfItem(atPath: daemon.socket)
        #expect(attributes[.posixPermissions] as? Int == 0o640)
        #expect(attributes[.groupOwnerAccountName] as? String == "daemon")

        let client = try TestClient.greeted(path: daemon.socket)
        daemon.signal(SIGTERM)
        withExtendedLifetime(client) {}  // connected until the daemon has stopped
        // The watchdog's pings (every 100 ms) sent before the stop wait in the socket ahead of it.
        // At most 10 s of them: a daemon that ignored SIGTERM would ping for ever.
        var next = message()
        for _ in 0..<100 where next == "WATCHDOG=1" { next = message() }
        #expect(next?.hasPrefix("STOPPING=1") == true, "\(String(describing: next))")
        let log = String(decoding: daemon.log.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains("client connected") && log.contains("uid=\(getuid())") && log.contains("pid=\(getpid())"), "\(log)")
    }

    @Test func socketActivationServesTheInheritedSocketAndLeavesItInPlace() throws {
        // What systemd does for motiond.socket: bind and listen, then start the service with it as fd 3.
        let path = temporarySocketPath()
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        #expect(bound == 0 && listen(listener, 16) == 0)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_adddup2(&actions, listener, 3)
        let state = NSTemporaryDirectory() + "motiond-state-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let arguments = [DaemonProcess.executable, "--socket", path + ".unused", "--state-directory", state] + Self.replay
        // LISTEN_PID must be the child's pid: a shell sets it after the fork, as systemd does.
        let script = "LISTEN_PID=$$ LISTEN_FDS=1 exec \(arguments.joined(separator: " "))"
        var environment = steadyEnvironment().merging(Self.noUmockdev) { _, new in new }.map { "\($0.key)=\($0.value)" }
        var argv: [UnsafeMutablePointer<CChar>?] = ["/bin/sh", "-c", script].map { (text: String) in strdup(text) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { (text: String) in strdup(text) } + [nil]
        environment.removeAll()
        var pid: pid_t = 0
        // Under `environmentLock`, as every test's launch: its child then holds no descriptor that a
        // copy being written has open (`copyExecutable`) between its fork and its exec.
        #expect(environmentLock.withLock { posix_spawn(&pid, "/bin/sh", &actions, nil, &argv, &envp) } == 0)
        posix_spawn_file_actions_destroy(&actions)
        close(listener)
        defer { kill(pid, SIGKILL) }

        var client: TestClient?
        try waitUntil { client = try? TestClient(path: path); return client != nil }
        // The socket is the test's: it accepts at once, and the greeting waits for the daemon's start,
        // which the full suite's start starves of CPU (`DaemonProcess`'s wait says by how much).
        let greeting = try client!.next("VERSION", seconds: 60)
        #expect(greeting.contains("proto_major"))
        #expect(!FileManager.default.fileExists(atPath: path + ".unused"), "it did not bind a socket of its own")
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        #expect(FileManager.default.fileExists(atPath: path), "systemd's socket file stays")
        unlink(path)
    }

    @Test func aBadConfigurationIsAClearErrorAtStartAndIsIgnoredOnReload() throws {
        let config = NSTemporaryDirectory() + "motiond-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).conf"
        try "log_level: loud\n".write(toFile: config, atomically: true, encoding: .utf8)
        let failing = Process()
        failing.executableURL = URL(fileURLWithPath: DaemonProcess.executable)
        failing.arguments = ["--config", config, "--socket", temporarySocketPath()] + Self.replay
        failing.environment = steadyEnvironment().merging(Self.noUmockdev) { _, new in new }
        let output = Pipe()
        failing.standardError = output
        try failing.runWithSteadyEnvironment()
        #expect(failing.waitUntilExit(seconds: 10), "a bad configuration stops the start")
        #expect(failing.terminationStatus != 0)
        let message = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(message.contains(config) && message.contains("log_level"), "\(message)")

        try "log_level: info\ndeclination: 2\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess(socket: temporarySocketPath(), arguments: ["--config", config] + Self.replay, environment: Self.noUmockdev)
        try "log_level: [broken\n".write(toFile: config, atomically: true, encoding: .utf8)
        kill(daemon.process.processIdentifier, SIGHUP)
        daemon.waitForLog("configuration not reloaded")  // the reload reads the file asynchronously
        try "log_level: debug\nsocket: /elsewhere.sock\n".write(toFile: config, atomically: true, encoding: .utf8)
        kill(daemon.process.processIdentifier, SIGHUP)
        daemon.waitForLog("configuration reloaded")
        let client = try TestClient(path: daemon.socket)  // still serving on its first socket
        _ = try client.next("VERSION")
        daemon.signal(SIGTERM)
        let log = daemon.finalLog()
        #expect(log.contains("<3>configuration not reloaded, the old one stays"), "\(log)")
        #expect(log.contains("<5>configuration reloaded") && log.contains("socket"), "\(log)")
        #expect(log.contains("<7>"), "debug messages after the reload: \(log)")
    }

    /// On an in-process server whose one device is the kit's scripted IMU (`ConnectionTests.imu`),
    /// which no request here opens.
    @Test func aClientFloodingRequestsWithoutReadingLosesNoReplyAndIsHeldBack() async throws {
        let log = MessageLog()
        let server = MotionServer(
            socketPath: temporarySocketPath(), source: ScriptedSource(devices: [ConnectionTests.imu]), logger: Logger(label: "test") { _ in log })
        try await server.start()
        try await server.whileServing {
            let client = try TestClient.greeted(path: server.socketPath)
            // 20,000 requests (far more than a queue holds) written before any reply is read; the
            // writer blocks when the daemon stops reading, and resumes as the replies are read.
            let count = 20_000
            let writer = Thread { for i in 0..<count { try? client.send(#"{"class":"STATUS","id":\#(i)}"#) } }
            writer.start()
            // Nothing read until the replies fill the socket and the queue, and the daemon stops reading
            // the requests: without that, the order would hold trivially.
            try waitUntil(seconds: 10) { log.contains("client reads its replies slowly: its requests wait") }
            var ids: [Int] = []
            while ids.count < count {
                let reply = try client.decode(StatusReply.self, try client.next(seconds: 10))
                if case .integer(let n) = reply.id { ids.append(Int(n)) }
            }
            #expect(ids == Array(0..<count), "every reply, in order")
        }
    }
}

/// Keeps every message logged, for a test to wait on what the daemon did.
final class MessageLog: LogHandler, @unchecked Sendable {
    // @unchecked: `messages` is behind its lock; the rest is set once.
    private let messages = Mutex<[String]>([])
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let details = (event.metadata ?? [:]).map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        messages.withLock { $0.append("\(event.message) \(details)") }
    }

    /// Whether a message starting with `prefix`, and with `detail` among its metadata, was logged.
    func contains(_ prefix: String, about detail: String = "") -> Bool { count(prefix, about: detail) > 0 }

    /// How many messages starting with `prefix`, and with `detail` among their metadata, were logged.
    func count(_ prefix: String, about detail: String = "") -> Int {
        // Foundation's `contains("")` is false: no detail asked is no condition.
        messages.withLock { $0.count { $0.hasPrefix(prefix) && (detail.isEmpty || $0.contains(detail)) } }
    }
}
