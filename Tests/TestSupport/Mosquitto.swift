import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Debian's `mosquitto` broker as a child process, on a loopback port of its own. Stopped when released.
public final class MosquittoBroker {
    public let port: Int
    public let directory: String
    private var process: Process?
    /// The listener's settings (TLS files, authentication).
    private let listenerLines: [String]

    /// Starts a broker on `port` (a free loopback port when nil); `listenerLines` configure its
    /// listener (after `listener PORT 127.0.0.1`; default: anyone may connect).
    public init(port: Int? = nil, listenerLines: [String] = ["allow_anonymous true"]) throws {
        directory = NSTemporaryDirectory() + "mosquitto-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.listenerLines = listenerLines
        self.port = try port ?? freeLoopbackPort()
        try start()
    }

    deinit { kill() }

    /// Starts (or starts again) the broker, and waits until it accepts connections.
    public func start() throws {
        let configuration = (["persistence false", "listener \(port) 127.0.0.1"] + listenerLines).joined(separator: "\n")
        try configuration.write(toFile: directory + "/mosquitto.conf", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
        process.arguments = ["-c", directory + "/mosquitto.conf"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.runWithSteadyEnvironment()
        self.process = process
        let deadline = Date().addingTimeInterval(10)
        while !Self.accepts(port: port) {
            guard Date() < deadline, process.hasNotEnded else { throw TestbedError("mosquitto did not start on port \(port)") }
            usleep(10_000)
        }
    }

    /// Kills the broker (SIGKILL: no goodbye to anyone; and children of the test process inherit its
    /// blocked SIGTERM) and waits for it to end.
    public func kill() {
        guard let process, process.hasNotEnded else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilEnded(seconds: 5)
    }

    /// Whether something accepts TCP connections on the loopback port.
    public static func accepts(port: Int) -> Bool {
        guard let fd = try? connectLoopback(port: port) else { return false }
        close(fd)
        return true
    }
}

/// `mosquitto_sub -v` as a child process: every message on `topic` as `topic payload` lines.
public final class MQTTSubscriber {
    private let process = Process()
    private let output: String

    public init(port: Int, topic: String, extraArguments: [String] = []) throws {
        output = NSTemporaryDirectory() + "mosquitto-sub-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).txt"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_sub")
        process.arguments = ["-h", "127.0.0.1", "-p", "\(port)", "-t", topic, "-v"] + extraArguments
        process.standardOutput = FileHandle(forWritingAtPath: output)
        process.standardError = FileHandle(forWritingAtPath: output)
        try process.runWithSteadyEnvironment()
    }

    deinit {
        // SIGKILL: children of the test process inherit its blocked SIGTERM.
        if process.hasNotEnded { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilEnded(seconds: 5)
        try? FileManager.default.removeItem(atPath: output)
    }

    /// The messages so far: topic and payload.
    public var messages: [(topic: String, payload: String)] {
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map { line in
            let parts = line.split(separator: " ", maxSplits: 1)
            return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
        }
    }

    /// Waits up to `seconds` for messages that satisfy `enough`; returns them.
    public func wait(seconds: Double, until enough: ([(topic: String, payload: String)]) -> Bool) -> [(topic: String, payload: String)] {
        let deadline = Date().addingTimeInterval(seconds)
        var received = messages
        while !enough(received) && Date() < deadline {
            usleep(20_000)
            received = messages
        }
        return received
    }
}
