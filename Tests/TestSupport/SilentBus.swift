import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A listener on a Unix socket that accepts every connection and reads what comes, never writing a
/// byte: a bus that never answers a client's authentication (issue 60, defect 9). Made with a bus to
/// wake into, it answers once `wake` is called: every connection, held and new, is handed to that bus
/// (what was held sent first, then bytes relayed both ways), as a system bus slow at boot or restarted
/// answers late; made with `driverAnswersLate` too, only the authentication and `Hello` are answered
/// at the wake, and the bus's other replies wait for `letTheDriverAnswer` (a bus driver slow at boot).
/// Killed when released.
public final class SilentBus {
    /// Its D-Bus address, for `DBUS_SYSTEM_BUS_ADDRESS`.
    public let address: String
    private let directory: String
    private let listener = Process()
    /// The bus `wake` hands the connections to, kept running as long as this one.
    private let target: PrivateSystemBus?

    /// A bus that never answers, or, given `wakingInto` a private bus, one that answers
    /// through that bus once woken (and, with `driverAnswersLate`, answers more than `Hello` once
    /// `letTheDriverAnswer` is called).
    public init(wakingInto target: PrivateSystemBus? = nil, driverAnswersLate: Bool = false) throws {
        self.target = target
        directory = NSTemporaryDirectory() + "silent-bus-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        address = "unix:path=\(directory)/bus"
        let script = """
            import os, socket, struct, sys, threading
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
            def hold_driver(upstream, connection):
                # The authentication's lines (text, each begun with a capital) and the first message
                # (Hello's reply) pass; the rest waits for the file argv[5].
                buffer, passed = b"", False
                upstream.settimeout(0.01)
                while not (passed and os.path.exists(sys.argv[5])):
                    while not passed and buffer[:1].isupper() and b"\\r\\n" in buffer:
                        line, buffer = buffer.split(b"\\r\\n", 1)
                        connection.sendall(line + b"\\r\\n")
                    if not passed and buffer[:1] in (b"l", b"B") and len(buffer) >= 16:
                        # A message's size (D-Bus specification, Message Format): its fixed header (16
                        # bytes), the header fields' array padded to 8, then the body.
                        body, _, fields = struct.unpack(("<" if buffer[:1] == b"l" else ">") + "III", buffer[4:16])
                        size = 16 + (fields + 7) // 8 * 8 + body
                        if len(buffer) >= size:
                            connection.sendall(buffer[:size])
                            buffer, passed = buffer[size:], True
                    try:
                        data = upstream.recv(65536)
                    except socket.timeout:
                        continue
                    if not data:
                        return
                    buffer += data
                upstream.settimeout(None)
                connection.sendall(buffer)
                relay(upstream, connection)
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
                answer = hold_driver if sys.argv[5] else relay
                threading.Thread(target=answer, args=(upstream, connection), daemon=True).start()
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
            driverAnswersLate ? "\(directory)/driver-answers" : "",
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

    /// Lets a bus made with `driverAnswersLate` give its other replies, held until now.
    public func letTheDriverAnswer() {
        _ = FileManager.default.createFile(atPath: "\(directory)/driver-answers", contents: nil)
    }

    deinit {
        kill(listener.processIdentifier, SIGKILL)
        listener.waitUntilExit()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
