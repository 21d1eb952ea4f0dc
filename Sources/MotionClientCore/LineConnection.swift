import FoundationEssentials
import MotionSystem
import MotionWire

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

/// One blocking connection to the daemon's socket, read and written as JSON lines: what
/// `MotionClient` is built on, and what a program (or a test) that speaks the protocol itself uses.
/// `@unchecked Sendable`: one thread reads; `send` and `shutDown` touch only the descriptor.
public final class LineConnection: @unchecked Sendable {
    /// The connected socket's file descriptor, lent (to shut one side down, or to poll it with others).
    public var descriptor: Int32 { socket.rawValue }
    /// The connected socket, closed when the connection goes.
    private let socket: OwnedDescriptor
    /// The socket it is connected to.
    public let socketPath: String
    private var framer = LineFramer(maximumLength: 1 << 20)
    private var lines: [[UInt8]] = []
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)

    /// Connects, and reads the greeting within `timeout` seconds, checking the protocol's major
    /// version (`readsGreeting: false` leaves the greeting as the first line to read).
    public init(socketPath: String, timeout: Double = 5, readsGreeting: Bool = true) throws(MotionClientError) {
        self.socketPath = socketPath
        socket = try UnixSocket.connect(to: socketPath)
        // From here the socket closes when the connection goes, also when this initialiser throws.
        guard readsGreeting else { return }
        let greeting = try nextLine(timeout: timeout)
        guard case .version(let version)? = try? AnyServerMessage(line: greeting) else {
            throw .connectionLost("no VERSION greeting from \(socketPath)")
        }
        guard version.protoMajor == ProtocolVersion.major else { throw .incompatibleProtocol(major: version.protoMajor) }
    }

    /// Sends one request line.
    public func send(_ request: Request) throws(MotionClientError) {
        let bytes: [UInt8]
        do {
            bytes = try request.encoded() + [UInt8(ascii: "\n")]
        } catch {
            throw .connectionLost("cannot encode the request: \(error)")
        }
        try send(raw: bytes)
    }

    /// Sends bytes as they are: lines the caller framed, well-formed or not.
    public func send(raw bytes: [UInt8]) throws(MotionClientError) {
        var sent = 0
        while sent < bytes.count {
            // A daemon gone away is an EPIPE for us to report, not a SIGPIPE that kills the program
            // using this library.
            switch bytes[sent...].withUnsafeBytes({ Syscall.send(descriptor, $0) }) {
            case .success(let n): sent += n
            case .failure(let error): throw .connectionLost("write: \(error)")
            }
        }
    }

    /// Unblocks a reader waiting in `nextLine` (it then fails with `connectionLost`).
    public func shutDown() { Syscall.shutDown(descriptor) }

    /// The next line, waiting at most `timeout` seconds (`nil`: for ever).
    public func nextLine(timeout: Double? = nil) throws(MotionClientError) -> [UInt8] {
        let deadline = timeout.map { Date().addingTimeInterval($0) }
        while lines.isEmpty {
            let remaining = deadline.map { Int32(max(0, $0.timeIntervalSinceNow) * 1000) } ?? -1
            switch Syscall.waitReadable(descriptor, timeoutMilliseconds: remaining) {
            case .success(false): throw .timeout(seconds: timeout ?? 0)
            case .success(true): break
            case .failure(let error): throw .connectionLost("poll: \(error)")
            }
            let n: Int
            switch buffer.withUnsafeMutableBytes({ Syscall.read(descriptor, into: $0) }) {
            case .success(0): throw .connectionLost("motiond closed the connection")
            case .success(let count): n = count
            case .failure(let error): throw .connectionLost("read: \(error)")
            }
            for case .line(let line) in framer.feed(buffer[0..<n]) { lines.append(line) }
        }
        return lines.removeFirst()
    }

    /// Sends `request` and waits for the reply of class `M` carrying `id`; an `ERROR` for it throws.
    public func roundTrip<M: ServerMessage>(_ request: Request, id: RequestID, expecting type: M.Type, timeout: Double) throws(MotionClientError) -> M {
        try send(request)
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let line = try nextLine(timeout: max(0.001, deadline.timeIntervalSinceNow))
            let message: AnyServerMessage
            do {
                message = try AnyServerMessage(line: line)
            } catch {
                // Only our reply unread ends the wait; a message in between that this version cannot
                // read (a later minor version's stream, say) is not ours.
                guard error.className == M.className else { continue }
                throw .connectionLost("malformed reply: \(error)")
            }
            if case .error(let error) = message, error.id == id { throw .refused(code: error.code, message: error.message) }
            if let reply = message.message as? M, reply.requestID == id { return reply }
            // else a stream message or event in between
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
        case let h as HistoryReply: h.id
        default: nil
        }
    }
}
