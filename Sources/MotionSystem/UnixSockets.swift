import CLinux

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Syscall {
    /// `socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC)` and `connect` to `path`: a connected descriptor,
    /// owned, or the errno of the call that failed (`ENAMETOOLONG` for a path that does not fit a
    /// `sockaddr_un`).
    public static func connectUnixStream(to path: String) throws(Errno) -> OwnedDescriptor {
        // Raw until connected: `withUnixAddress`'s result is a copyable `Result`.
        let fd = try withUnixAddress(path) { address, length -> Result<Int32, Errno> in
            retryingInterrupts { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }.flatMap { fd in
                let connection = OwnedDescriptor(fd)
                // A connect interrupted by a signal goes on in the background (connect(2)): not retried.
                guard Glibc.connect(connection.rawValue, address, length) == 0 else { return .failure(Errno(rawValue: errno)) }
                return .success(connection.take())
            }
        }.get()
        return OwnedDescriptor(fd)
    }

    /// `sendto` of one datagram to the Unix socket at `path` (`@` at its start: the abstract
    /// namespace), from a socket made for it, without SIGPIPE.
    public static func sendDatagram(_ bytes: [UInt8], toUnixSocket path: String) -> Result<Void, Errno> {
        withUnixAddress(path) { address, length in
            retryingInterrupts { socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }.flatMap { fd in
                let sender = OwnedDescriptor(fd)
                return retryingInterrupts { sendto(sender.rawValue, bytes, bytes.count, Int32(MSG_NOSIGNAL), address, length) }.flatMap { sent in
                    sent == bytes.count ? .success(()) : .failure(.messageTooLong)
                }
            }
        }
    }

    /// `send(fd, bytes, MSG_NOSIGNAL)`: bytes sent (perhaps fewer than given). A peer gone away is
    /// `EPIPE` for the caller to report, not a SIGPIPE that kills the process.
    public static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Int, Errno> {
        retryingInterrupts { Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) }
    }

    /// `shutdown(fd, SHUT_RDWR)`: ends both directions now (a reader blocked on it wakes at once);
    /// its error (a socket already shut down) is not actionable.
    public static func shutDown(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }

    /// `read(fd, buffer)`: bytes read, 0 at end of file.
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        retryingInterrupts { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// Runs `body` with `path` as a `sockaddr_un` and its length; a leading `@` names the abstract
    /// namespace.
    private static func withUnixAddress<T>(
        _ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result<T, Errno>
    ) -> Result<T, Errno> {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return .failure(.fileNameTooLong) }
        let abstract = bytes.first == UInt8(ascii: "@")
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in bytes.enumerated() { raw[i] = byte }
            if abstract { raw[0] = 0 }
        }
        // A path name's length counts its terminating zero; an abstract name's has none.
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
        return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) } }
    }
}
