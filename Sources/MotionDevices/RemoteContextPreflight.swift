import MotionSystem

/// Asks a board's iiod for its context description (`PRINT`) before libiio is let to, with the two
/// bounds libiio lacks: a size (libiio allocates whatever length the board announces, 2 GB included)
/// and a total time (libiio's timeout is per read, so a board that sends a byte a second holds it for
/// ever). The description is counted as it streams by, never kept.
///
/// libiio then fetches the description itself: a board that passes this check and misbehaves on the
/// second fetch is bounded only by libiio's per-read timeout, on the lister's own thread.
struct RemoteContextPreflight {
    /// The largest description let through, bytes. A board's is tens of kilobytes (one with every
    /// channel of a large FPGA design, about a megabyte).
    static let maximumDescriptionBytes = 4 << 20
    /// The time the whole exchange may take, s.
    static let timeLimit = 5.0
    /// iiod's TCP port (libiio's `IIOD_PORT`).
    static let defaultPort: UInt16 = 30431

    let uri: String

    /// Connects, asks, and reads the description to its end; throws `networkContextUnavailable` for a
    /// board that cannot be reached and `networkContextRefused` for one whose answer is not let through.
    func check() throws(DeviceError) {
        let deadline = Syscall.monotonicNanoseconds() + Int64(Self.timeLimit * 1e9)
        let (host, port) = try address()
        let connection: OwnedDescriptor
        do {
            connection = try Syscall.connectTCP(host: host, port: port, deadline: deadline)
        } catch {
            throw .networkContextUnavailable(uri: uri, errno: error.rawValue)
        }
        let socket = connection.rawValue
        let request = Array("PRINT\r\n".utf8)
        let sent = request.withUnsafeBytes { Syscall.send(socket, $0) }
        guard case .success(request.count) = sent else { throw .networkContextUnavailable(uri: uri, errno: ErrnoValue.timedOut) }
        var reader = Reader(socket: socket, deadline: deadline, uri: uri)
        let line = try reader.line(atMost: 32)
        guard let length = Int(line) else { throw .networkContextRefused(uri: uri, reason: "its answer to PRINT is not a length: \(line.debugDescription)") }
        guard length >= 0 else { throw .networkContextUnavailable(uri: uri, errno: Int32(clamping: -length)) }
        guard length <= Self.maximumDescriptionBytes else {
            throw .networkContextRefused(
                uri: uri, reason: "its description would be \(length) bytes, more than the \(Self.maximumDescriptionBytes >> 20) MiB allowed")
        }
        try reader.skip(length + 1)  // and its newline
    }

    /// The host and port of `ip:host[:port]`, as libiio reads them (an IPv6 address in brackets when a
    /// port follows it).
    func address() throws(DeviceError) -> (host: String, port: UInt16) {
        guard uri.hasPrefix("ip:") else { throw .networkContextRefused(uri: uri, reason: "not an ip: URI") }
        let rest = uri.dropFirst(3)
        let colons = rest.filter { $0 == ":" }.count
        var host = Substring(rest), port = Self.defaultPort
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") {
                guard let number = UInt16(after.dropFirst()) else { throw .networkContextRefused(uri: uri, reason: "its port is not a number") }
                port = number
            }
        } else if colons == 1, let colon = rest.firstIndex(of: ":") {
            host = rest[..<colon]
            guard let number = UInt16(rest[rest.index(after: colon)...]) else {
                throw .networkContextRefused(uri: uri, reason: "its port is not a number")
            }
            port = number
        }
        return (String(host), port)
    }

    /// Reads from the socket until the deadline, into one small buffer.
    private struct Reader {
        let socket: Int32
        let deadline: Int64
        let uri: String
        private var buffer = [UInt8](repeating: 0, count: 65536)
        private var start = 0, end = 0

        init(socket: Int32, deadline: Int64, uri: String) {
            (self.socket, self.deadline, self.uri) = (socket, deadline, uri)
        }

        /// Fills the buffer when it is empty; throws at the end of the stream or past the deadline.
        private mutating func fill(received: Int) throws(DeviceError) {
            guard start == end else { return }
            if case .failure = Syscall.waitReadable(socket, deadline: deadline) {
                throw .networkContextRefused(uri: uri, reason: "its description did not come within \(RemoteContextPreflight.timeLimit) s (\(received) bytes came)")
            }
            let count = buffer.withUnsafeMutableBytes { Syscall.read(socket, into: $0) }
            switch count {
            case .success(let count) where count > 0: (start, end) = (0, count)
            case .success: throw .networkContextUnavailable(uri: uri, errno: ErrnoValue.connectionReset)
            case .failure(let error) where error.rawValue == ErrnoValue.wouldBlock: break
            case .failure(let error): throw .networkContextUnavailable(uri: uri, errno: error.rawValue)
            }
        }

        /// One line, without its newline, of at most `limit` bytes.
        mutating func line(atMost limit: Int) throws(DeviceError) -> String {
            var line: [UInt8] = []
            while true {
                try fill(received: line.count)
                while start < end {
                    let byte = buffer[start]
                    start += 1
                    if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
                    line.append(byte)
                    guard line.count <= limit else {
                        throw .networkContextRefused(uri: uri, reason: "its answer to PRINT is not a length: a line longer than \(limit) bytes")
                    }
                }
            }
        }

        /// Reads and forgets `count` bytes.
        mutating func skip(_ count: Int) throws(DeviceError) {
            var left = count
            while left > 0 {
                try fill(received: count - left)
                let taken = min(left, end - start)
                start += taken
                left -= taken
            }
        }
    }
}
