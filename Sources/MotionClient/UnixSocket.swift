import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Connecting to a Unix stream socket: the one place the client side makes `socket` and `connect`.
public enum UnixSocket {
    /// A connected, close-on-exec descriptor for the stream socket at `path`; the caller closes it.
    /// A full listen backlog (EAGAIN: the daemon is busy accepting) is waited out for up to
    /// `patience` seconds.
    public static func connect(to path: String, patience: Double = 1) throws(MotionClientError) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity else { throw .connectionLost("socket path longer than \(capacity - 1) bytes: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
        }
        let deadline = Date().addingTimeInterval(patience)
        while true {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw .connectionLost("socket(): \(String(cString: strerror(errno)))") }
            let status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            if status == 0 { return fd }
            let code = errno
            close(fd)
            switch code {
            case EAGAIN where Date() < deadline: usleep(1000)
            case ENOENT, ECONNREFUSED: throw .daemonNotRunning(socket: path)
            case EACCES, EPERM: throw .permissionDenied(socket: path)
            default: throw .connectionLost("connect \(path): \(String(cString: strerror(code)))")
            }
        }
    }
}
