import Foundation
import MotionWire

#if canImport(Glibc)
import Glibc
#endif

/// What went wrong talking to motiond, with what to do about it.
public enum MotionClientError: Error, CustomStringConvertible, Equatable {
    /// Nothing listens at the socket.
    case daemonNotRunning(socket: String)
    /// The socket exists but this user may not connect to it.
    case permissionDenied(socket: String)
    /// The daemon speaks a protocol major version this library does not.
    case incompatibleProtocol(major: Int)
    /// The connection failed or closed.
    case connectionLost(String)
    /// No reply in time.
    case timeout(seconds: Double)
    /// The daemon refused the request.
    case refused(code: ErrorCode, message: String)
    /// The daemon ended the stream (its sensor was unplugged or failed).
    case streamEnded(stream: StreamKind, reason: String)

    public var description: String {
        switch self {
        case .daemonNotRunning(let socket):
            "motiond is not running (nothing listens at \(socket)): start it with `sudo systemctl start motiond`, or run `motiond` (add `--replay FILE` to play a recording)"
        case .permissionDenied(let socket):
            "permission denied on \(socket): join the group that owns it (`sudo usermod -aG motion $USER`, then log in again)"
        case .incompatibleProtocol(let major):
            "motiond speaks protocol \(major).x; this client speaks \(ProtocolVersion.major).x: update one of them"
        case .connectionLost(let why): "lost the connection to motiond: \(why)"
        case .timeout(let seconds): "motiond did not answer within \(seconds) s"
        case .refused(let code, let message): "motiond refused the request (\(code.rawValue)): \(message)"
        case .streamEnded(let stream, let reason): "the \(stream.rawValue) stream ended: \(reason)"
        }
    }
}

/// One blocking connection to the daemon's socket, read and written as JSON lines.
/// `@unchecked Sendable`: one thread reads; `send` and `close` touch only the descriptor.
final class LineConnection: @unchecked Sendable {
    private let fd: Int32
    let socketPath: String
    private var framer = LineFramer(maximumLength: 1 << 20)
    private var lines: [[UInt8]] = []
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)

    /// Connects and reads the greeting, checking the protocol's major version.
    init(socketPath: String, timeout: Double = 5) throws(MotionClientError) {
        self.socketPath = socketPath
        fd = try UnixSocket.connect(to: socketPath)
        // From here `deinit` closes `fd`, also when this initialiser throws.
        let greeting = try nextLine(timeout: timeout)
        guard let version = try? Wire.decode(Version.self, from: greeting) else {
            throw .connectionLost("no VERSION greeting from \(socketPath)")
        }
        guard version.protoMajor == ProtocolVersion.major else { throw .incompatibleProtocol(major: version.protoMajor) }
    }

    deinit { close(fd) }

    /// Sends one request line.
    func send(_ request: Request) throws(MotionClientError) {
        let bytes: [UInt8]
        do {
            bytes = try request.encoded() + [UInt8(ascii: "\n")]
        } catch {
            throw .connectionLost("cannot encode the request: \(error)")
        }
        var sent = 0
        while sent < bytes.count {
            // MSG_NOSIGNAL: a daemon gone away is an EPIPE for us to report, not a SIGPIPE that kills
            // the program using this library.
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw .connectionLost("write: \(String(cString: strerror(errno)))") }
            sent += n
        }
    }

    /// Unblocks a reader waiting in `nextLine` (it then fails with `connectionLost`).
    func shutDown() { shutdown(fd, Int32(SHUT_RDWR)) }

    /// The next line, waiting at most `timeout` seconds (`nil`: for ever).
    func nextLine(timeout: Double? = nil) throws(MotionClientError) -> [UInt8] {
        let deadline = timeout.map { Date().addingTimeInterval($0) }
        while lines.isEmpty {
            let remaining = deadline.map { Int32(max(0, $0.timeIntervalSinceNow) * 1000) } ?? -1
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, remaining)
            if ready == 0 { throw .timeout(seconds: timeout ?? 0) }
            if ready < 0 {
                if errno == EINTR { continue }
                throw .connectionLost("poll: \(String(cString: strerror(errno)))")
            }
            let n = read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw .connectionLost(n == 0 ? "motiond closed the connection" : String(cString: strerror(errno))) }
            for case .line(let line) in framer.feed(buffer[0..<n]) { lines.append(line) }
        }
        return lines.removeFirst()
    }

    /// Sends `request` and waits for the reply of class `M` carrying `id`; an `ERROR` for it throws.
    func roundTrip<M: ServerMessage>(_ request: Request, id: RequestID, expecting type: M.Type, timeout: Double) throws(MotionClientError) -> M {
        try send(request)
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let line = try nextLine(timeout: max(0.001, deadline.timeIntervalSinceNow))
            switch Wire.className(of: line) {
            case M.className:
                guard let reply = try? Wire.decode(M.self, from: line) else { throw .connectionLost("malformed \(M.className) reply") }
                if reply.requestID == id { return reply }
            case ErrorReply.className:
                if let error = try? Wire.decode(ErrorReply.self, from: line), error.id == id {
                    throw .refused(code: error.code, message: error.message)
                }
            default:
                continue  // a stream message or event in between
            }
        }
    }
}

extension ServerMessage {
    /// The `id` of a reply, if the message carries one.
    var requestID: RequestID? {
        switch self {
        case let s as Snapshot: s.id
        case let d as DevicesReply: d.id
        case let s as StatusReply: s.id
        case let w as Watching: w.id
        default: nil
        }
    }
}
