import Foundation
import MotionSystem

/// Connecting to a Unix stream socket, with the waiting and the errors a client wants.
public enum UnixSocket {
    /// A connected, close-on-exec descriptor for the stream socket at `path`; the caller closes it.
    /// A full listen backlog (EAGAIN: the daemon is busy accepting) is waited out for up to
    /// `patience` seconds.
    public static func connect(to path: String, patience: Double = 1) throws(MotionClientError) -> Int32 {
        let deadline = Date().addingTimeInterval(patience)
        while true {
            switch Syscall.connectUnixStream(to: path) {
            case .success(let fd): return fd
            case .failure(.resourceTemporarilyUnavailable) where Date() < deadline: Syscall.sleep(nanoseconds: 1_000_000)
            case .failure(.noSuchFileOrDirectory), .failure(.connectionRefused): throw .daemonNotRunning(socket: path)
            case .failure(.permissionDenied), .failure(.notPermitted): throw .permissionDenied(socket: path)
            case .failure(let error): throw .connectionLost("connect \(path): \(error)")
            }
        }
    }
}
