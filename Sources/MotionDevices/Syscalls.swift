#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The only place in MotionDevices that calls the C library directly (besides libiio and libudev):
// one thin wrapper per syscall, each returning a typed result.

/// The errno values the rest of the device layer names.
enum ErrorCode {
    static let noSuchDevice = ENODEV
    static let noSuchFile = ENOENT
    static let noSuchDeviceOrAddress = ENXIO
    static let invalidArgument = EINVAL
    static let badDescriptor = EBADF
    static let timedOut = ETIMEDOUT
}

/// The symbolic name of an errno value, for error messages.
func errnoName(_ code: Int32) -> String {
    switch code {
    case EIO: "EIO"
    case ENODEV: "ENODEV"
    case ENOENT: "ENOENT"
    case ENXIO: "ENXIO"
    case EACCES: "EACCES"
    case EPERM: "EPERM"
    case EBUSY: "EBUSY"
    case EINVAL: "EINVAL"
    case ETIMEDOUT: "ETIMEDOUT"
    case EAGAIN: "EAGAIN"
    case EBADF: "EBADF"
    case ENOMEM: "ENOMEM"
    case EFBIG: "EFBIG"
    default: "errno \(code)"
    }
}

enum Syscall {
    /// `clock_gettime(CLOCK_MONOTONIC)` in integer nanoseconds.
    static func monotonicNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` until `deadline` (ns); returns early on a signal.
    static func sleep(untilMonotonic deadline: Int64) {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        _ = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil)
    }

    /// `open(path, O_RDONLY | O_CLOEXEC)`.
    static func openReadOnly(_ path: String) -> Result<Int32, Errno> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        return fd >= 0 ? .success(fd) : .failure(Errno(errno))
    }

    /// `open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)`, as a shell's `echo value > attribute` opens it.
    static func openWriteOnly(_ path: String) -> Result<Int32, Errno> {
        let fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)
        return fd >= 0 ? .success(fd) : .failure(Errno(errno))
    }

    /// `pread(fd, buffer, count, 0)`: sysfs regenerates an attribute on each read from offset 0.
    static func readFromStart(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        while true {
            let n = pread(fd, buffer.baseAddress, buffer.count, 0)
            if n >= 0 { return .success(n) }
            if errno != EINTR { return .failure(Errno(errno)) }
        }
    }

    /// `write(fd, bytes)`, the whole of it.
    static func write(_ fd: Int32, _ bytes: [UInt8]) -> Result<Void, Errno> {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return .failure(Errno(errno))
                }
                offset += n
            }
            return .success(())
        }
    }

    /// `close(fd)`; errors from close are not actionable here.
    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// `poll` on one descriptor for input, with a timeout in milliseconds (-1: forever).
    /// Returns whether it became readable.
    static func waitReadable(_ fd: Int32, timeoutMilliseconds: Int32) -> Result<Bool, Errno> {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let n = poll(&pfd, 1, timeoutMilliseconds)
            if n >= 0 { return .success(n > 0 && (pfd.revents & Int16(POLLIN)) != 0) }
            if errno != EINTR { return .failure(Errno(errno)) }
        }
    }

    /// `access(path, F_OK)`: whether a path exists.
    static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    /// `pipe()` then `fcntl(FD_CLOEXEC)`: a wake-up channel for a thread blocked in poll.
    /// Returns (read end, write end).
    static func makeWakePipe() -> Result<(Int32, Int32), Errno> {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return .failure(Errno(errno)) }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return .success((fds[0], fds[1]))
    }

    /// Writes one byte to a wake pipe's write end.
    static func wake(_ writeEnd: Int32) {
        var one: UInt8 = 1
        _ = Glibc.write(writeEnd, &one, 1)
    }

    /// `poll` on two descriptors for input; returns which became readable.
    static func waitReadable(_ a: Int32, _ b: Int32, timeoutMilliseconds: Int32) -> Result<(Bool, Bool), Errno> {
        var fds = (pollfd(fd: a, events: Int16(POLLIN), revents: 0), pollfd(fd: b, events: Int16(POLLIN), revents: 0))
        while true {
            let n = withUnsafeMutableBytes(of: &fds) { raw in
                poll(raw.baseAddress!.assumingMemoryBound(to: pollfd.self), 2, timeoutMilliseconds)
            }
            if n >= 0 {
                return .success(((fds.0.revents & Int16(POLLIN)) != 0, (fds.1.revents & Int16(POLLIN)) != 0))
            }
            if errno != EINTR { return .failure(Errno(errno)) }
        }
    }
}

/// A failed syscall's errno.
struct Errno: Error, Hashable {
    var code: Int32
    init(_ code: Int32) { self.code = code }
}
