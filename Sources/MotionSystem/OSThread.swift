#if canImport(Glibc)
import Glibc
#endif

/// A dedicated OS thread for a blocking loop (a sensor capture, the udev monitor, the log writer, the
/// D-Bus connection), so that blocking in `poll`/`read` never occupies a Swift concurrency thread.
/// Named, so that `top -H` and /proc/PID/task/*/comm tell the threads apart.
public final class OSThread: @unchecked Sendable {
    // @unchecked: `handle` is written by `start` and read by `join`, both on the owner's thread.
    private let name: String
    private let body: @Sendable () -> Void
    private var handle: pthread_t? = nil

    /// A thread that will run `body`, called `name` (the kernel keeps 15 bytes of it).
    public init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }

    /// Starts the thread; on failure (EAGAIN: the process's thread limit) returns the errno and
    /// the body never runs.
    public func start() -> Errno? {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self)
        let status = pthread_create(&thread, nil, { argument in
            let me = Unmanaged<OSThread>.fromOpaque(argument!).takeRetainedValue()
            me.nameCurrentThread()
            me.body()
            return nil
        }, context.toOpaque())
        guard status == 0 else {
            context.release()
            return Errno(rawValue: status)
        }
        handle = thread
        return nil
    }

    /// Starts a thread called `name` that runs `body` and frees itself as it returns (nobody joins
    /// it); the errno if it cannot be made, and then `body` never runs.
    public static func startDetached(name: String, body: @escaping @Sendable () -> Void) -> Errno? {
        OSThread(name: name) {
            body()
            pthread_detach(pthread_self())
        }.start()
    }

    /// Runs `body` on a thread called `name` made for it, which ends with it, and returns what it
    /// returns: blocking work awaited without holding a Swift concurrency thread or keeping a pool's
    /// idle worker. Throws what `body` throws, or the errno if no thread can be made.
    public static func run<Value: Sendable>(named name: String, _ body: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
            if let failure = startDetached(name: name, body: { continuation.resume(with: Result { try body() }) }) {
                continuation.resume(throwing: failure)
            }
        }
    }

    /// Names the calling thread (`pthread_setname_np` needs `_GNU_SOURCE`, which Glibc's module lacks;
    /// /proc/thread-self/comm is the same name).
    private func nameCurrentThread() {
        guard let comm = try? Syscall.openWriteOnly("/proc/thread-self/comm") else { return }
        _ = Syscall.write(comm.rawValue, Array(name.utf8.prefix(15)))
    }

    /// Called by the thread itself when nobody will `join` it: its resources are freed as it returns.
    public func detachFromCurrentThread() {
        pthread_detach(pthread_self())
    }

    /// Waits for the body to return.
    public func join() {
        guard let handle else { return }
        pthread_join(handle, nil)
        self.handle = nil
    }
}
