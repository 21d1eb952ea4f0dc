#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Syscall {
    /// `getaddrinfo(host, port)`, then for each address `socket(SOCK_STREAM | SOCK_NONBLOCK |
    /// SOCK_CLOEXEC)` and `connect`, waiting for it at most until `deadline` (monotonic ns): a connected,
    /// non-blocking descriptor, owned, or the errno of the last attempt (`ETIMEDOUT` past the deadline;
    /// `EHOSTUNREACH` for a name that does not resolve).
    public static func connectTCP(host: String, port: UInt16, deadline: Int64) throws(Errno) -> OwnedDescriptor {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else { throw Errno(rawValue: EHOSTUNREACH) }
        defer { freeaddrinfo(first) }
        var last = Errno(rawValue: EHOSTUNREACH)
        var address: UnsafeMutablePointer<addrinfo>? = first
        while let candidate = address {
            address = candidate.pointee.ai_next
            let flags = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
            let fd = socket(candidate.pointee.ai_family, flags, 0)
            guard fd >= 0 else {
                last = Errno(rawValue: errno)
                continue
            }
            // Closed when this attempt fails.
            let connection = OwnedDescriptor(fd)
            if Glibc.connect(fd, candidate.pointee.ai_addr, candidate.pointee.ai_addrlen) == 0 { return connection }
            last = Errno(rawValue: errno)
            if last.rawValue == EINPROGRESS {
                switch waitWritable(fd, deadline: deadline) {
                case .success:
                    var status: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &status, &length)
                    if status == 0 { return connection }
                    last = Errno(rawValue: status)
                case .failure(let error):
                    last = error
                }
            }
        }
        throw last
    }

    /// `poll` for output on `fd` until `deadline` (monotonic ns); `ETIMEDOUT` past it.
    public static func waitWritable(_ fd: Int32, deadline: Int64) -> Result<Void, Errno> {
        waitFor(Int16(POLLOUT), on: fd, deadline: deadline)
    }

    /// `poll` for input on `fd` until `deadline` (monotonic ns); `ETIMEDOUT` past it. Readable
    /// includes the end of the stream and an error, which the read that follows tells.
    public static func waitReadable(_ fd: Int32, deadline: Int64) -> Result<Void, Errno> {
        waitFor(Int16(POLLIN), on: fd, deadline: deadline)
    }

    private static func waitFor(_ events: Int16, on fd: Int32, deadline: Int64) -> Result<Void, Errno> {
        while true {
            let left = deadline - monotonicNanoseconds()
            guard left > 0 else { return .failure(Errno(rawValue: ETIMEDOUT)) }
            var poller = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&poller, 1, Int32(min(left / 1_000_000 + 1, Int64(Int32.max))))
            if ready > 0 { return .success(()) }
            if ready < 0 && errno != EINTR { return .failure(Errno(rawValue: errno)) }
        }
    }
}

extension Syscall {
    /// `getsockopt(TCP_INFO)`'s `tcpi_bytes_received`: the bytes the connection has received so far
    /// (RFC 4898's ThruOctetsReceived), whether or not they were read. Glibc's `struct tcp_info` stops
    /// before it, so it is read at its offset in the kernel's (linux/tcp.h, 128, since Linux 4.1); nil
    /// from an older kernel, which fills less.
    public static func bytesReceived(onTCPSocket fd: Int32) -> UInt64? {
        // On the stack: the MQTT thread asks at every read.
        withUnsafeTemporaryAllocation(byteCount: 232, alignment: 8) { info in
            info.initializeMemory(as: UInt8.self, repeating: 0)
            var length = socklen_t(info.count)
            guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_INFO, info.baseAddress, &length) == 0, length >= 136 else { return nil }
            return info.loadUnaligned(fromByteOffset: 128, as: UInt64.self)
        }
    }
}
