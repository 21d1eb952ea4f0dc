import Foundation
import MotionClient
import MotionWire

#if canImport(Glibc)
import Glibc
#endif

/// A blocking line client for the daemon's Unix socket, as any program would write one.
/// `@unchecked Sendable`: one thread may `send` while another reads; sending touches only the descriptor.
final class TestClient: @unchecked Sendable {
    let fd: Int32
    private var framer = LineFramer(maximumLength: 1 << 20)
    private var lines: [[UInt8]] = []

    init(path: String) throws {
        fd = try UnixSocket.connect(to: path)
    }

    /// A client connected to `path` that has read the daemon's `VERSION` greeting.
    static func greeted(path: String) throws -> TestClient {
        let client = try TestClient(path: path)
        _ = try client.next("VERSION")
        return client
    }

    deinit { close(fd) }

    func send(_ text: String) throws {
        let bytes = Array((text + "\n").utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else { throw TestClientError("short write") }
    }

    /// The next line, waiting at most `seconds`.
    func next(seconds: Double = 5) throws -> String {
        let deadline = Date().addingTimeInterval(seconds)
        while lines.isEmpty {
            let remaining = Int32(max(0, deadline.timeIntervalSinceNow) * 1000)
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, remaining) > 0 else { throw TestClientError("no line within \(seconds) s") }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let n = read(fd, &buffer, buffer.count)
            guard n > 0 else { throw TestClientError("connection closed") }
            for case .line(let line) in framer.feed(buffer[0..<n]) { lines.append(line) }
        }
        return String(decoding: lines.removeFirst(), as: UTF8.self)
    }

    /// The next line of class `name`, skipping others (at most `seconds` in all).
    func next(_ name: String, seconds: Double = 5) throws -> String {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let line = try next(seconds: max(0.01, deadline.timeIntervalSinceNow))
            if Wire.className(of: Array(line.utf8)) == name { return line }
        }
    }

    func decode<M: ServerMessage>(_ type: M.Type, _ line: String) throws -> M {
        try Wire.decode(type, from: Array(line.utf8))
    }
}

struct TestClientError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
