import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A listener on a Unix socket that accepts every connection and reads what comes, never writing a
/// byte: a bus that never answers a client's authentication (issue 60, defect 9). Killed when released.
public final class SilentBus {
    /// Its D-Bus address, for `DBUS_SYSTEM_BUS_ADDRESS`.
    public let address: String
    private let directory: String
    private let listener = Process()

    public init() throws {
        directory = NSTemporaryDirectory() + "silent-bus-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        address = "unix:path=\(directory)/bus"
        let script = """
            import socket, sys, threading
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(sys.argv[1])
            server.listen(16)
            open(sys.argv[2], "w").close()
            def drain(connection):
                while connection.recv(4096):
                    pass
            while True:
                connection, _ = server.accept()
                with open(sys.argv[2], "a") as log:
                    log.write("connected\\n")
                threading.Thread(target=drain, args=(connection,), daemon=True).start()
            """
        listener.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        listener.arguments = ["-c", script, "\(directory)/bus", "\(directory)/connections"]
        try listener.runWithSteadyEnvironment()
        try waitUntil(seconds: 10) { FileManager.default.fileExists(atPath: "\(directory)/connections") }
    }

    /// How many connections it has accepted.
    public var connections: Int {
        ((try? String(contentsOfFile: "\(directory)/connections", encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    deinit {
        kill(listener.processIdentifier, SIGKILL)
        listener.waitUntilExit()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
