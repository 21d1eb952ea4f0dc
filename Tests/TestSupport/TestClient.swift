import Foundation
import MotionClient
import MotionWire

/// The client library's `LineConnection`, with the strings and waits the tests write in.
/// `@unchecked Sendable`: one thread may `send` while another reads; sending touches only the descriptor.
public final class TestClient: @unchecked Sendable {
    private let connection: LineConnection

    /// A connection whose first line to read is the daemon's `VERSION` greeting.
    public init(path: String) throws {
        connection = try LineConnection(socketPath: path, readsGreeting: false)
    }

    /// A client connected to `path` that has read the daemon's `VERSION` greeting.
    public static func greeted(path: String) throws -> TestClient {
        let client = try TestClient(path: path)
        _ = try client.next("VERSION")
        return client
    }

    /// The socket's descriptor, for tests that shut one side down or write without reading.
    public var fd: Int32 { connection.descriptor }

    /// Sends `text` and a newline.
    public func send(_ text: String) throws {
        try connection.send(raw: Array((text + "\n").utf8))
    }

    /// The next line, waiting at most `seconds` (`MotionClientError.timeout`, or `.connectionLost`
    /// once the daemon closed the connection).
    public func next(seconds: Double = 5) throws -> String {
        String(decoding: try connection.nextLine(timeout: seconds), as: UTF8.self)
    }

    /// The next line of class `name`, skipping others (at most `seconds` in all).
    public func next(_ name: String, seconds: Double = 5) throws -> String {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let line = try next(seconds: max(0.01, deadline.timeIntervalSinceNow))
            if Wire.className(of: Array(line.utf8)) == name { return line }
        }
    }

    public func decode<M: ServerMessage>(_ type: M.Type, _ line: String) throws -> M {
        try Wire.decode(type, from: Array(line.utf8))
    }
}

public struct TestClientError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
