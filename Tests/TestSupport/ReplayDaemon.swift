import Foundation
import MotionClient

#if canImport(Glibc)
import Glibc
#endif

/// The names of process `pid`'s threads (/proc/PID/task/*/comm, proc(5)).
public func threadNames(ofProcess pid: Int32) -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    return tasks.compactMap { task in
        (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8))?.trimmingCharacters(in: .newlines)
    }
}

/// Each thread of a process: its name, the kernel function it sleeps in (wchan) and its system call
/// (the first field of /proc/PID/task/TID/syscall: the call's number, "running" or -1).
public func threadStates(ofProcess pid: Int32) -> String {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    func read(_ task: String, _ file: String) -> String {
        ((try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/\(file)", encoding: .utf8)) ?? "?").trimmingCharacters(in: .whitespacesAndNewlines)
    }
    return tasks.sorted().map { task in
        "  \(task) \(read(task, "comm")): wchan \(read(task, "wchan")), syscall \(read(task, "syscall").split(separator: " ").first.map(String.init) ?? "?")"
    }.joined(separator: "\n")
}

/// A `motiond --replay` child process on a socket of its own (the built `motiond` next to the
/// test bundle), stopped with SIGTERM when released. It needs no hardware and no umockdev.
public final class ReplayDaemon {
    public let process = Process()
    /// The socket it listens on.
    public let socket: String
    /// Its own directory (socket, state, log).
    public let directory: String

    /// The built products' directory.
    public static var products: URL { URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent() }

    /// The bundled BROAD recording.
    public static var bundledRecording: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Recordings/broad-04-slow-rotation.motionrec.gz").standardized.path
    }

    /// Starts `motiond --replay recording` with `arguments`, on `socket` (default: a fresh path), its
    /// environment the test's with `environment` added.
    public init(
        recording: String = ReplayDaemon.bundledRecording, arguments: [String] = ["--loop"], socket: String? = nil, environment: [String: String] = [:]
    ) throws {
        directory = NSTemporaryDirectory() + "replay-daemon-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.socket = socket ?? directory + "/motiond.sock"
        process.executableURL = Self.products.appendingPathComponent("motiond")
        process.arguments = ["--replay", recording, "--socket", self.socket, "--state-directory", directory + "/state"] + arguments
        _ = FileManager.default.createFile(atPath: directory + "/motiond.log", contents: nil)
        process.standardError = FileHandle(forWritingAtPath: directory + "/motiond.log")
        if !environment.isEmpty { process.environment = steadyEnvironment().merging(environment) { _, new in new } }
        try process.runWithSteadyEnvironment()
        let deadline = Date().addingTimeInterval(10)
        while !Self.accepts(self.socket) {
            guard Date() < deadline, process.hasNotEnded else { throw TestbedError("motiond did not start: \(log)") }
            usleep(10_000)
        }
        // The metrics part starts after the socket's (MotionServer's start order): its port is waited for
        // too, so that a test's first scrape does not race it.
        if let flag = arguments.firstIndex(of: "--metrics"), flag + 1 < arguments.count,
            let port = arguments[flag + 1].split(separator: ":").last.flatMap({ Int($0) })
        {
            while (try? connectLoopback(port: port)).map({ close($0) }) == nil {
                guard Date() < deadline, process.hasNotEnded else { throw TestbedError("motiond's metrics did not listen: \(log)") }
                usleep(10_000)
            }
        }
    }

    deinit { stop() }

    /// What it logged.
    public var log: String { (try? String(contentsOfFile: directory + "/motiond.log", encoding: .utf8)) ?? "" }

    /// Its threads' names.
    public var threadNames: [String] { TestSupport.threadNames(ofProcess: process.processIdentifier) }

    /// Stops it (SIGTERM) and waits for it to exit; one that has not within 10 s is killed and
    /// `false` returned.
    @discardableResult
    public func stop() -> Bool {
        guard process.hasNotEnded else { return true }
        kill(process.processIdentifier, SIGTERM)
        return process.waitUntilEnded(seconds: 10)
    }

    /// Whether something accepts connections at `path`.
    public static func accepts(_ path: String) -> Bool {
        (try? UnixSocket.connect(to: path)) != nil  // and closed at once
    }
}
