import CConcurrencyHook
import NIOCore
import NIOPosix

/// Runs Swift concurrency's global jobs (lifecycle, signals) on NIO's singleton event loops instead of
/// libdispatch's worker pool, whose monitor wakes the process every second for good once a worker has
/// run (a daemon with no clients should sleep), and through which a job costs a thread wake-up.
///
/// NIO does this itself (`NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor`),
/// but finds the runtime's hook with `dlsym`, which cannot see it in the statically linked executable
/// that the package ships: there the link gives its address (`CConcurrencyHook`), and the same
/// takeover is made with it.
public enum ConcurrencyOnNIO {
    private typealias EnqueueGlobalHook = @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void

    /// Installs the takeover; `false` if another hook was installed already. Call once, first thing in `main`.
    @discardableResult
    public static func install() -> Bool {
        if NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() { return true }
        let slot = motiond_enqueue_global_hook_slot()!
        guard slot.pointee == nil else { return false }
        return withUnsafeTemporaryAllocation(of: EnqueueGlobalHook.self, capacity: 1) { hook in
            hook.baseAddress!.initialize(to: { job, _ in
                MultiThreadedEventLoopGroup.singleton.any().executor.enqueue(ExecutorJob(job))
            })
            return hook.baseAddress!.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 1) {
                slot.pointee = $0.pointee
                return true
            }
        }
    }
}
