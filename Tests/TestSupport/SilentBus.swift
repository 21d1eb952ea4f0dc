import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A listener on a Unix socket that accepts every connection and reads what comes, never writing a
/// byte: a bus that never answers a client's authentication (issue 60, defect 9). Made with a bus to
/// wake into, it answers once `wake` is called: every connection, held and new, is handed to that bus
/// (what was held sent first, then bytes relayed both ways), as a system bus slow at boot or restarted
/// answers late. Killed when released.
public final class SilentBus {
    /// Its D-Bus address, for `DBUS_SYSTEM_BUS_ADDRESS`.
    public let address: String
    private let directory: String
    private let listener = Process()
    /// The bus `wake` hands the connections to, kept running as long as this one.
    private let target: PrivateSystemBus?

    /// A bus that never answers, or, given `wakingInto` a private bus, one that answers
    /// through that bus once woken.
    public init(wakingInto target: PrivateSystemBus? = nil) throws {
        self.target = target
        directory = NSTemporaryDirectory() + "silent-bus-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        address = "unix:path=\(directory)/bus"
        let script = """
            import os, socket, sys, threading
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(sys.argv[1])
            server.listen(16)
            open(sys.argv[2], "w").close()
            def relay(source, destination):
                try:
                    while data := source.recv(65536):
                        destination.sendall(data)
                except OSError:
                    pass
                for end in (source, destination):
                    try:
                        end.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
            def serve(connection):
                held = b""
                connection.settimeout(0.01)
                while not os.path.exists(sys.argv[4]):
                    try:
                        data = connection.recv(4096)
                    except socket.timeout:
                        continue
                    if not data:
                        return
                    held += data
                connection.settimeout(None)
                upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                upstream.connect(sys.argv[3])
                upstream.sendall(held)
                threading.Thread(target=relay, args=(upstream, connection), daemon=True).start()
                relay(connection, upstream)
            while True:
                connection, _ = server.accept()
                with open(sys.argv[2], "a") as log:
                    log.write("connected\\n")
                threading.Thread(target=serve, args=(connection,), daemon=True).start()
            """
        listener.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        // Woken by a file (a signal may be blocked in the tests' process, and so in its children); never
        // without a bus to wake into.
        listener.arguments = [
            "-c", script, "\(directory)/bus", "\(directory)/connections", target.map { $0.directory + "/bus" } ?? "", "\(directory)/woken",
        ]
        try listener.runWithSteadyEnvironment()
        try waitUntil(seconds: 10) { FileManager.default.fileExists(atPath: "\(directory)/connections") }
    }

    /// How many connections it has accepted.
    public var connections: Int {
        ((try? String(contentsOfFile: "\(directory)/connections", encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    /// Starts answering: hands every connection to the bus given at `init` (none: nothing changes).
    public func wake() {
        guard target != nil else { return }
        _ = FileManager.default.createFile(atPath: "\(directory)/woken", contents: nil)
    }

    deinit {
        kill(listener.processIdentifier, SIGKILL)
        listener.waitUntilExit()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
