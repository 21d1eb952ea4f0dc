import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A stand-in for motiond that says what a test scripts, for the client's side of the protocol: it
/// greets each connection with `VERSION`, then answers each request line with `replies`, where
/// `$ID` is the request's own id. For lines no motiond of this version sends (a later minor
/// version's values), which only such a stand-in can send.
public final class ScriptedDaemon: @unchecked Sendable {
    // @unchecked: `listener` is set once; the accepting thread owns the connections.
    public let path: String
    private let listener: Int32
    private let replies: [String]

    public init(replies: [String]) throws {
        path = temporarySocketPath()
        self.replies = replies
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(listener, 4) == 0 else { throw TestbedError("cannot listen at \(path): errno \(errno)") }
        Thread { [self] in serve() }.start()
    }

    deinit {
        Glibc.shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        unlink(path)
    }

    private func serve() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            Thread { [self] in converse(on: connection) }.start()
        }
    }

    private func converse(on connection: Int32) {
        defer { close(connection) }
        write(#"{"class":"VERSION","release":"scripted","proto_major":1,"proto_minor":2}"#, to: connection)
        var pending: [UInt8] = []
        var byte: UInt8 = 0
        while read(connection, &byte, 1) == 1 {
            guard byte == UInt8(ascii: "\n") else {
                pending.append(byte)
                continue
            }
            let request = (try? JSONSerialization.jsonObject(with: Data(pending))) as? [String: Any]
            pending.removeAll()
            let id = request?["id"].flatMap { try? JSONSerialization.data(withJSONObject: $0, options: .fragmentsAllowed) }
            for reply in replies { write(reply.replacingOccurrences(of: "$ID", with: id.map { String(decoding: $0, as: UTF8.self) } ?? "null"), to: connection) }
        }
    }

    private func write(_ line: String, to connection: Int32) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }
}
