import FoundationEssentials
import MotionSystem

/// Connecting to a Unix stream socket, with the waiting and the errors a client wants.
public enum UnixSocket {
    /// A connected, close-on-exec descriptor for the stream socket at `path`, owned. A full listen
    /// backlog (EAGAIN: the daemon is busy accepting) is waited out for up to `patience` seconds.
    public static func connect(to path: String, patience: Double = 1) throws(MotionClientError) -> OwnedDescriptor {
        let deadline = Date().addingTimeInterval(patience)
        while true {
            do {
                return try Syscall.connectUnixStream(to: path)
            } catch .resourceTemporarilyUnavailable where Date() < deadline {
                Syscall.sleep(nanoseconds: 1_000_000)
            } catch .noSuchFileOrDirectory, .connectionRefused {
                throw .daemonNotRunning(socket: path)
            } catch .permissionDenied, .notPermitted {
                throw .permissionDenied(socket: path)
            } catch {
                throw .connectionLost("connect \(path): \(error)")
            }
        }
    }
}
