import Foundation
import MotionClient

#if canImport(Glibc)
import Glibc
#endif

/// A `dbus-daemon` of the system bus's type on a socket of its own, anyone allowed anything: the
/// system bus the peers under test talk on. Stopped when released.
public final class PrivateSystemBus {
    public let directory: String
    public let address: String
    private let process = Process()

    /// Anyone may do anything: the peers under test need no policy.
    public static let openPolicy = """
          <policy context="default">
            <allow user="*"/>
            <allow own="*"/>
            <allow send_destination="*"/>
            <allow receive_sender="*"/>
          </policy>
        """

    /// A bus whose rules are `policy` (`<policy>` elements, or `<include>`s of policy files).
    public init(policy: String = PrivateSystemBus.openPolicy) throws {
        directory = NSTemporaryDirectory() + "system-bus-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let socket = directory + "/bus"
        address = "unix:path=" + socket
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
              "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>\(address)</listen>
              <auth>EXTERNAL</auth>
            \(policy)
            </busconfig>
            """.write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--config-file=\(directory)/bus.conf", "--nofork", "--nopidfile"]
        try process.runWithSteadyEnvironment()
        // The file appears at bind(), a moment before listen(): wait until a connection is accepted.
        try waitUntil(seconds: 10) {
            (try? UnixSocket.connect(to: socket)) != nil  // and closed at once
        }
    }

    /// Whether `name` has an owner on this bus now.
    public func hasOwner(_ name: String) -> Bool {
        let answer = try? gdbus(["call", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus", "--method",
                                 "org.freedesktop.DBus.NameHasOwner", name])
        return answer?.contains("true") == true
    }

    deinit {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// A peer program on the private bus (it inherits the testbed through umockdev's preload), its
/// standard output kept in a file.
public final class Peer {
    private let process = Process()
    private let outputPath: String

    public init(_ executable: String, arguments: [String] = [], bus: PrivateSystemBus) throws {
        outputPath = bus.directory + "/" + URL(fileURLWithPath: executable).lastPathComponent + ".out"
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["DBUS_SYSTEM_BUS_ADDRESS": bus.address]) { _, new in new }
        let file = FileHandle(forWritingAtPath: outputPath)
        process.standardOutput = file
        process.standardError = file
        try process.runWithSteadyEnvironment()
    }

    /// What it printed so far.
    public var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    /// Sends it the signal `number`.
    public func signal(_ number: Int32) {
        kill(process.processIdentifier, number)
    }

    /// Kills it: neither peer keeps state, and under umockdev's preload neither ends on SIGTERM
    /// within 5 s.
    public func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { stop() }
}

extension PrivateSystemBus {
    /// Runs `gdbus` with `arguments` on this bus; what it printed (standard output, then error).
    public func gdbus(_ arguments: [String]) throws -> String {
        try output(of: "/usr/bin/gdbus", [arguments[0], "--address", address] + arguments.dropFirst())
    }

    /// Runs `dbus-send` with `arguments` as a client of this bus; what it printed. Unlike gdbus, it
    /// sends the arguments it is given, whatever the method's signature.
    public func dbusSend(_ arguments: [String]) throws -> String {
        try output(of: "/usr/bin/dbus-send", ["--bus=\(address)"] + arguments)
    }

    private func output(of executable: String, _ arguments: [String]) throws -> String {
        let program = Process()
        program.executableURL = URL(fileURLWithPath: executable)
        program.arguments = arguments
        let output = Pipe()
        program.standardOutput = output
        program.standardError = output
        try program.runWithSteadyEnvironment()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        program.waitUntilExit()
        return text
    }
}
