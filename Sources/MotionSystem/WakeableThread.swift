import CLinux
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A thread that blocks in `poll` and that any thread can wake (`wake`) or end (`stop`): the one
/// wait of every loop on a thread of its own (a sensor capture, the udev monitor, the D-Bus and MQTT
/// threads, a remote's lister, the log writer). Its wake-up is an eventfd (one descriptor, owned:
/// closed when the last of the owner and the thread lets it go, so a wake never reaches a closed or
/// reused descriptor), polled beside the caller's descriptor.
///
/// `stop` joins the thread; a thread whose body returns while nobody joins it (it ended by itself,
/// or only `requestStop` ran) detaches itself, so its resources go as it returns.
public final class WakeableThread: Sendable {
    /// What one `wait` saw: the caller's descriptor's `revents` (0 for nothing; `POLLHUP` and `POLLERR`
    /// besides those asked), and whether the thread was woken.
    public struct Wakeup: Sendable, Equatable {
        public var happened: Int16
        public var woken: Bool
        /// Whether the caller's descriptor has input (or its end: `POLLHUP`, `POLLERR`, for a read to find).
        public var readable: Bool { happened & Int16(POLLIN | POLLHUP | POLLERR) != 0 }
        /// Whether it has input.
        public var hasInput: Bool { happened & Int16(POLLIN) != 0 }
    }

    private let name: String
    let wakeup: OwnedDescriptor
    private let stopRequested = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)
    private let thread = Mutex<OSThread?>(nil)

    /// A thread called `name` (not yet started), with its eventfd; throws the errno of `eventfd(2)`
    /// (EMFILE: the process is out of descriptors).
    public init(name: String) throws(Errno) {
        self.name = name
        let descriptor = eventfd(0, Int32(EFD_CLOEXEC) | Int32(EFD_NONBLOCK))
        guard descriptor >= 0 else { throw Errno(rawValue: errno) }
        wakeup = OwnedDescriptor(descriptor)
    }

    /// Runs `body` on the thread; the errno if it cannot be made (EAGAIN: the thread limit), and
    /// then `body` never runs. A thread asked to stop before it started is not started (nil: nothing
    /// failed), so a stop that came first is not outrun. `body` holds the thread (and what it
    /// captures) until it returns.
    public func start(_ body: @escaping @Sendable () -> Void) -> Errno? {
        let os = OSThread(name: name) { [self] in
            body()
            finished.store(true, ordering: .releasing)
            // Nobody in `stop` to join it: it frees itself as it returns.
            thread.withLock { $0.take() }?.detachFromCurrentThread()
        }
        // Published and started under the lock: a `stop` meanwhile waits until the thread can be
        // joined (its handle set), and the body's own `take` until it is published. A stop asked
        // before the lock was taken is seen here (`stop` asks, then takes the lock to join).
        return thread.withLock { published in
            guard !isStopping else { return nil }
            published = os
            guard let failure = os.start() else { return nil }
            published = nil
            return failure
        }
    }

    /// Whether `requestStop` or `stop` ran.
    public var isStopping: Bool { stopRequested.load(ordering: .acquiring) }

    /// Whether the body ran and returned: nothing is left to join.
    public var hasFinished: Bool { finished.load(ordering: .acquiring) }

    /// Wakes the thread: its `wait` under way, or its next, returns `woken`. Never blocks; wakes
    /// that come before the thread waits are one wake.
    public func wake() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { Glibc.write(wakeup.rawValue, $0.baseAddress, 8) }
    }

    /// Asks the thread to end, without waiting: `isStopping`, and a wake.
    public func requestStop() {
        stopRequested.store(true, ordering: .releasing)
        wake()
    }

    /// Asks the thread to end and waits until it has (at once if it ended, or never started). Not
    /// to be called from the thread itself.
    public func stop() {
        requestStop()
        thread.withLock { $0.take() }?.join()
    }

    /// Waits for `events` on `descriptor` (none: only a wake or the timeout), for a wake, or for
    /// `timeoutMilliseconds` (-1: forever); consumes the wake. A loop checks `isStopping` before it
    /// waits: a stop asked in between is a wake, so the wait returns at once.
    public func wait(for events: Int16 = Int16(POLLIN), on descriptor: Int32? = nil, timeoutMilliseconds: Int32) -> Result<Wakeup, Errno> {
        var fds = (
            pollfd(fd: wakeup.rawValue, events: Int16(POLLIN), revents: 0), pollfd(fd: descriptor ?? -1, events: events, revents: 0)
        )
        let polled = Syscall.retryingInterrupts {
            withUnsafeMutableBytes(of: &fds) { raw in
                poll(raw.baseAddress!.assumingMemoryBound(to: pollfd.self), descriptor == nil ? 1 : 2, timeoutMilliseconds)
            }
        }
        return polled.map { _ in
            let woken = fds.0.revents & Int16(POLLIN) != 0
            if woken {
                var count: UInt64 = 0
                _ = withUnsafeMutableBytes(of: &count) { Glibc.read(wakeup.rawValue, $0.baseAddress, 8) }
            }
            return Wakeup(happened: fds.1.revents, woken: woken)
        }
    }

    /// Sleeps until `deadline` (ns, monotonic) or until woken (a stop is a wake), with sub-millisecond
    /// precision: a polling loop's wait between reads. Long waits block on the wake, so a stop is
    /// immediate; the last millisecond is slept on the clock.
    public func sleep(untilMonotonic deadline: Int64) {
        let remaining = deadline - Syscall.monotonicNanoseconds()
        if remaining > 2_000_000 {
            if case .success(let wakeup) = wait(timeoutMilliseconds: Int32(clamping: (remaining - 1_000_000) / 1_000_000)), wakeup.woken { return }
        }
        Syscall.sleep(untilMonotonic: deadline)
    }
}
