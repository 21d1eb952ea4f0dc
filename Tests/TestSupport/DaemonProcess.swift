import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs the `motiond` executable; it inherits the testbed's environment, so it sees the fake devices.
public final class DaemonProcess {
    public let process = Process()
    public let socket: String
    public let log = Pipe()

    /// The `motiond` built beside the tests.
    public static let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("motiond").path

    /// - Parameter inheriting: descriptor numbers the daemon starts with, each the file at its path
    ///   opened for reading and writing (a FIFO the test writes to): Foundation's `Process` closes
    ///   every other descriptor, so bash opens them and then becomes the daemon.
    public init(
        socket: String, arguments: [String] = [], environment: [String: String] = [:], executable: String = DaemonProcess.executable,
        inheriting: [Int32: String] = [:]
    ) throws {
        self.socket = socket
        // A state directory of its own unless the test gives one: as root motiond keeps its calibration
        // in /var/lib/motiond, and one test's learnt gyroscope scale made another's still device
        // calibrate too slowly, depending on the order they ran in.
        let arguments = arguments.contains { $0.hasPrefix("--state-directory") }
            ? arguments : arguments + ["--state-directory", NSTemporaryDirectory() + "daemon-state-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"]
        if inheriting.isEmpty {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = ["--socket", socket] + arguments
        } else {
            let opens = inheriting.sorted { $0.key < $1.key }.map { "\($0.key)<>'\($0.value)'" }.joined(separator: " ")
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = ["-c", "exec \(opens); exec \"$@\"", "motiond", executable, "--socket", socket] + arguments
        }
        process.environment = steadyEnvironment().merging(environment) { _, new in new }
        process.standardError = log
        try process.runWithSteadyEnvironment()
        // The file appears at bind(), a moment before listen(): wait until a connection is accepted,
        // or the daemon ends. The bound only says how long a failure takes: at the full suite's start
        // (every suite starting on two cores) a daemon that needs 0.3 s of CPU to listen waited 5 s
        // runnable for a CPU (`scheduled`), against 0.1 s when its suite runs alone.
        do {
            try waitUntil(seconds: 60) { (try? TestClient(path: socket)) != nil || !process.hasNotEnded }
            guard process.hasNotEnded else { throw TestbedError("it ended") }
        } catch {
            // What it said, so that the failure says why it did not come up.
            waitForLog("\n", count: .max, seconds: 0.2)
            let (ran, waited) = Self.scheduled(process.processIdentifier)
            throw TestbedError(
                "motiond (\(process.hasNotEnded ? "running" : "ended"), \(ran) s on a CPU, \(waited) s runnable waiting for one) did not accept on \(socket): \(error); it logged: \(logged)")
        }
    }

    /// The seconds `pid`'s threads have run on a CPU and waited runnable for one so far, summed over
    /// its threads (/proc/PID/task/TID/schedstat, ns: the kernel's scheduler statistics): a daemon
    /// that waited long for a CPU was starved by the machine's load, not stuck in itself.
    static func scheduled(_ pid: Int32) -> (ran: Double, waited: Double) {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.reduce((0.0, 0.0)) { sum, task in
            let fields = ((try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8)) ?? "").split(separator: " ")
            guard fields.count >= 2, let ran = Double(fields[0]), let waited = Double(fields[1]) else { return sum }
            return (sum.0 + ran / 1e9, sum.1 + waited / 1e9)
        }
    }

    deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

    /// What the daemon has logged so far (read as it comes, so that a test can wait for a line).
    private var logged = ""

    /// Waits until the log holds `text` `count` times (or `seconds` pass: the test then fails on
    /// what follows): a barrier on what the daemon did, not a guess at how long it takes.
    /// Returns whether it came.
    @discardableResult
    public func waitForLog(_ text: String, count: Int = 1, seconds: Double = 5) -> Bool {
        let fd = log.fileHandleForReading.fileDescriptor
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        func found() -> Bool { logged.components(separatedBy: text).count - 1 >= count }
        while !found(), Date() < deadline {
            var reader = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&reader, 1, 100) > 0 else { continue }
            let n = read(fd, &buffer, buffer.count)
            guard n > 0 else { break }
            logged += String(decoding: buffer[0..<n], as: UTF8.self)
        }
        return found()
    }

    /// What the daemon logged until now (what it writes within 0.2 s included): for a failure's message.
    public var logSoFar: String {
        waitForLog("\n", count: .max, seconds: 0.2)
        return logged
    }

    /// The whole log, once the daemon has exited.
    public func finalLog() -> String {
        logged + String(decoding: log.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    /// Sends `number` and returns the seconds until the daemon exited (nil: not within `seconds`, and
    /// then it is killed).
    public func secondsToExit(after number: Int32, within seconds: Double = 10) -> Double? {
        let sent = Date()
        kill(process.processIdentifier, number)
        guard process.waitUntilExit(seconds: seconds) else {
            kill(process.processIdentifier, SIGKILL)
            return nil
        }
        return Date().timeIntervalSince(sent)
    }

    /// Sends `number` and waits for the daemon to exit (killed after 10 s: the test then fails on
    /// its termination reason instead of hanging).
    public func signal(_ number: Int32) {
        kill(process.processIdentifier, number)
        process.waitUntilExit(seconds: 10)
    }
}
