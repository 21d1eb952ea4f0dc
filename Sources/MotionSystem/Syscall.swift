import CLinux
import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The package's one syscall layer (besides what libiio, libudev and NIO do inside): one thin
// wrapper per syscall, each returning a typed result, on swift-system's `Errno` and
// `FileDescriptor`; an interrupted call (EINTR) is retried in one place, `retryingInterrupts`.

/// A failed syscall's errno: swift-system's.
public typealias Errno = SystemPackage.Errno

/// The errno values the rest of the package names.
public enum ErrnoValue {
    public static let noSuchDevice = ENODEV
    public static let noSuchFile = ENOENT
    public static let noSuchDeviceOrAddress = ENXIO
    public static let invalidArgument = EINVAL
    public static let badDescriptor = EBADF
    public static let timedOut = ETIMEDOUT
    public static let permissionDenied = EACCES
    public static let connectionReset = ECONNRESET
    public static let wouldBlock = EAGAIN
    public static let processOutOfDescriptors = EMFILE
    public static let systemOutOfDescriptors = ENFILE
    public static let busy = EBUSY
}

/// The errno of the last failed C library call on this thread.
public func currentErrno() -> Int32 { errno }

/// The symbolic name of an errno value, for error messages.
public func errnoName(_ code: Int32) -> String {
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
    case ENOTTY: "ENOTTY"
    default: "errno \(code)"
    }
}

public enum Syscall {
    /// Runs a call that returns −1 and sets errno on failure, again while it is interrupted by a
    /// signal (EINTR): the one place the package retries.
    @inlinable
    public static func retryingInterrupts<T: FixedWidthInteger>(_ call: () -> T) -> Result<T, Errno> {
        while true {
            let result = call()
            if result >= 0 { return .success(result) }
            if errno != EINTR { return .failure(Errno(rawValue: errno)) }
        }
    }

    /// `gethostname(2)`: this machine's name.
    public static func hostName() -> Result<String, Errno> {
        var name = [CChar](repeating: 0, count: 256)
        return retryingInterrupts { gethostname(&name, name.count - 1) }.map { _ in
            String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// `getpid(2)`: this process's id.
    public static func processID() -> Int32 { getpid() }

    /// `getuid(2)`: the user this process runs as.
    public static func userID() -> UInt32 { getuid() }

    /// `clock_gettime(CLOCK_MONOTONIC)` in integer nanoseconds.
    public static func monotonicNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// `clock_gettime(CLOCK_BOOTTIME)` in integer nanoseconds: the monotonic clock plus the time the
    /// machine slept, so that their difference grows by each sleep.
    public static func boottimeNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_BOOTTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// `clock_gettime(CLOCK_REALTIME)` in integer nanoseconds of Unix time: the wall clock, for what
    /// outlives a boot (the step history).
    public static func realtimeNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// Sleeps `nanoseconds` on the monotonic clock (less if a signal comes).
    public static func sleep(nanoseconds: Int64) {
        sleep(untilMonotonic: monotonicNanoseconds() + nanoseconds)
    }

    /// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` until `deadline` (ns); returns early on a signal.
    public static func sleep(untilMonotonic deadline: Int64) {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        _ = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil)
    }

    /// `fcntl(fd, F_GETFD)`: whether `fd` names an open descriptor of this process (nil: it does), or
    /// the errno (EBADF) if it does not.
    public static func checkOpen(_ fd: Int32) -> Errno? {
        fcntl(fd, F_GETFD) == -1 ? Errno(rawValue: errno) : nil
    }

    /// `realpath(3)`: `path` with every symbolic link and `..` resolved; nil if it cannot be (errno's).
    public static func resolvedPath(_ path: String) -> Result<String, Errno> {
        guard let resolved = realpath(path, nil) else { return .failure(Errno(rawValue: errno)) }
        defer { free(resolved) }
        return .success(String(cString: resolved))
    }

    /// `open(path, O_RDONLY | O_CLOEXEC)`, owned.
    public static func openReadOnly(_ path: String) throws(Errno) -> OwnedDescriptor {
        OwnedDescriptor(try retryingInterrupts { open(path, O_RDONLY | O_CLOEXEC) }.get())
    }

    /// `open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)`, as a shell's `echo value > attribute` opens it; owned.
    public static func openWriteOnly(_ path: String) throws(Errno) -> OwnedDescriptor {
        OwnedDescriptor(try retryingInterrupts { open(path, O_WRONLY | O_TRUNC | O_CLOEXEC) }.get())
    }

    /// `pread(fd, buffer, count, 0)`: sysfs regenerates an attribute on each read from offset 0.
    public static func readFromStart(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        retryingInterrupts { pread(fd, buffer.baseAddress, buffer.count, 0) }
    }

    /// `write(fd, bytes)`, the whole of it.
    public static func write(_ fd: Int32, _ bytes: [UInt8]) -> Result<Void, Errno> {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                switch retryingInterrupts({ Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset) }) {
                case .success(let n): offset += n
                case .failure(let error): return .failure(error)
                }
            }
            return .success(())
        }
    }

    /// `fcntl(fd, F_DUPFD_CLOEXEC, 0)`: a second descriptor of the same open file, closed on exec; owned.
    public static func duplicate(_ fd: Int32) throws(Errno) -> OwnedDescriptor {
        let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { throw Errno(rawValue: errno) }
        return OwnedDescriptor(copy)
    }

    /// `sigprocmask(SIG_BLOCK)`: blocks `signals` in the calling thread, and so in every thread it
    /// makes afterwards (they inherit its mask); they stay pending until read (`makeSignalDescriptor`).
    /// Returns the set blocked.
    @discardableResult
    public static func blockSignals(_ signals: [Int32]) -> Result<sigset_t, Errno> {
        var mask = sigset_t()
        sigemptyset(&mask)
        for signal in signals { sigaddset(&mask, signal) }
        return sigprocmask(SIG_BLOCK, &mask, nil) == 0 ? .success(mask) : .failure(Errno(rawValue: errno))
    }

    /// Blocks `signals` (`blockSignals`) and returns a `signalfd(2)` from which they are read instead, one 128-byte
    /// `signalfd_siginfo` each: for an event loop that waits for descriptors only. Call it before
    /// any thread is made, or a thread that does not block them takes their default action. Closed on
    /// exec, non-blocking; owned.
    public static func makeSignalDescriptor(for signals: [Int32]) throws(Errno) -> OwnedDescriptor {
        var mask = try blockSignals(signals).get()
        let fd = signalfd(-1, &mask, Int32(SFD_CLOEXEC | SFD_NONBLOCK))
        guard fd >= 0 else { throw Errno(rawValue: errno) }
        return OwnedDescriptor(fd)
    }

    /// `timerfd_create(CLOCK_MONOTONIC)` then `timerfd_settime`: a descriptor that becomes readable
    /// every `period` ns (reading it gives the expirations since the last read, a UInt64), for an
    /// event loop that waits for descriptors only. Closed on exec; owned.
    public static func makePeriodicTimer(period: Int64) throws(Errno) -> OwnedDescriptor {
        let fd = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_CLOEXEC))
        guard fd >= 0 else { throw Errno(rawValue: errno) }
        let timer = OwnedDescriptor(fd)
        try setTimerPeriod(timer.rawValue, period: period).get()
        return timer
    }

    /// `timerfd_settime`: `fd`'s timer fires every `period` ns from one period from now.
    public static func setTimerPeriod(_ fd: Int32, period: Int64) -> Result<Void, Errno> {
        let interval = timespec(tv_sec: Int(period / 1_000_000_000), tv_nsec: Int(period % 1_000_000_000))
        var setting = itimerspec(it_interval: interval, it_value: interval)
        return timerfd_settime(fd, 0, &setting, nil) == 0 ? .success(()) : .failure(Errno(rawValue: errno))
    }

    /// `poll` on one descriptor for input, with a timeout in milliseconds (-1: forever).
    /// Returns whether it became readable.
    public static func waitReadable(_ fd: Int32, timeoutMilliseconds: Int32) -> Result<Bool, Errno> {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return retryingInterrupts { poll(&pfd, 1, timeoutMilliseconds) }.map { $0 > 0 && (pfd.revents & Int16(POLLIN)) != 0 }
    }

    /// `isatty(fd)`: whether the descriptor is a terminal.
    public static func isTerminal(_ fd: Int32) -> Bool {
        isatty(fd) == 1
    }

    /// `getrlimit(RLIMIT_NOFILE)`, then `setrlimit` with the soft limit raised to the hard one, at most
    /// `ceiling` (the soft limit of 1,024 is for programs that use `select`, and none here does): the
    /// soft limit in force afterwards.
    public static func raiseDescriptorLimit(toAtMost ceiling: Int) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        let wanted = min(limit.rlim_max, rlim_t(ceiling))
        if wanted > limit.rlim_cur {
            var raised = limit
            raised.rlim_cur = wanted
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return Int(wanted) }
        }
        return Int(limit.rlim_cur)
    }

    /// `ioctl(fd, IIO_GET_EVENT_FD_IOCTL, &descriptor)` on an open `/dev/iio:deviceN`: a new
    /// descriptor (closed on exec) from which the device's enabled events are read as 16-byte
    /// `struct iio_event_data` records (include/uapi/linux/iio/events.h). `ENODEV`: the device has no
    /// event interface; `EBUSY`: another open file holds it. Owned.
    public static func iioEventDescriptor(_ fd: Int32) throws(Errno) -> OwnedDescriptor {
        var descriptor: Int32 = -1
        _ = try retryingInterrupts { Glibc.ioctl(fd, iioGetEventDescriptorRequest, &descriptor) }.get()
        return OwnedDescriptor(descriptor)
    }

    /// `_IOR('i', 0x90, int)` (include/uapi/linux/iio/events.h).
    private static let iioGetEventDescriptorRequest = UInt(0x8004_6990)

    /// `open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)`: a character device to write events to (`/dev/uinput`); owned.
    public static func openDeviceForWriting(_ path: String) throws(Errno) -> OwnedDescriptor {
        OwnedDescriptor(try retryingInterrupts { open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC) }.get())
    }

    /// `ioctl(fd, request, value)`: a request that takes an `int` by value (`UI_SET_EVBIT`).
    public static func ioctl(_ fd: Int32, _ request: UInt, value: Int32) -> Result<Void, Errno> {
        retryingInterrupts { Glibc.ioctl(fd, request, value) }.map { _ in }
    }

    /// `ioctl(fd, request, pointer)`: a request that reads or writes the bytes at `pointer` (`UI_DEV_SETUP`).
    public static func ioctl(_ fd: Int32, _ request: UInt, pointer: UnsafeMutableRawPointer) -> Result<Void, Errno> {
        retryingInterrupts { Glibc.ioctl(fd, request, pointer) }.map { _ in }
    }

    /// `ioctl(fd, request)`: a request without an argument (`UI_DEV_CREATE`).
    public static func ioctl(_ fd: Int32, _ request: UInt) -> Result<Void, Errno> {
        retryingInterrupts { Glibc.ioctl(fd, request) }.map { _ in }
    }

    /// The names in directory `path` (`.` and `..` left out), by `opendir` and `readdir`.
    public static func directoryEntries(_ path: String) -> Result<[String], Errno> {
        guard let directory = opendir(path) else { return .failure(Errno(rawValue: errno)) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != ".", name != ".." { names.append(name) }
        }
        return .success(names)
    }

    /// `access(path, F_OK)`: whether a path exists.
    public static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }
}
