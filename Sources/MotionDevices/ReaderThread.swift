import MotionSystem

#if canImport(Glibc)
import Glibc
#endif

/// A dedicated OS thread for a blocking read loop (a sensor capture, the udev monitor), so that
/// blocking in `poll`/`read` never occupies a Swift concurrency thread.
final class ReaderThread: @unchecked Sendable {
    // @unchecked: `handle` is written by `start` and read by `join`, both on the owner's thread.
    private let body: @Sendable () -> Void
    private var handle: pthread_t? = nil

    init(body: @escaping @Sendable () -> Void) {
        self.body = body
    }

    /// Starts the thread; on failure (EAGAIN: the process's thread limit) returns the errno and
    /// the body never runs.
    func start() -> Errno? {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self)
        let status = pthread_create(&thread, nil, { argument in
            let me = Unmanaged<ReaderThread>.fromOpaque(argument!).takeRetainedValue()
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

    /// Called by the thread itself when nobody will `join` it: its resources are freed as it returns.
    func detachFromCurrentThread() {
        pthread_detach(pthread_self())
    }

    /// Waits for the body to return.
    func join() {
        guard let handle else { return }
        pthread_join(handle, nil)
        self.handle = nil
    }
}
