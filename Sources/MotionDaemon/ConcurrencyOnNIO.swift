import CConcurrencyHook
import NIOCore
import Synchronization

/// Runs Swift concurrency's global jobs (lifecycle, signals) on the daemon's one event loop instead of
/// libdispatch's worker pool, whose monitor wakes the process every second for good once a worker has
/// run (a daemon with no clients should sleep), through which a job costs a thread wake-up, and whose
/// threads would count against the daemon's four at rest (issue 63).
///
/// NIO does this itself for its singleton group
/// (`NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor`), but
/// finds the runtime's hook with `dlsym`, which cannot see it in the statically linked executable
/// that the package ships, and serves a group of its own threads, where motiond's loop is its main
/// thread: the link gives the hook's address (`CConcurrencyHook`), and the jobs go to the loop given.
public enum ConcurrencyOnNIO {
    private typealias EnqueueGlobalHook = @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void

    private final class Target: Sendable {
        let eventLoop: any EventLoop
        init(_ eventLoop: any EventLoop) { self.eventLoop = eventLoop }
    }

    /// The loop the jobs run on; set once, by `install`, before the hook can be called.
    private static let target = AtomicLazyReference<Target>()

    private static func enqueueOnTarget(_ job: UnownedJob) {
        target.load()!.eventLoop.executor.enqueue(ExecutorJob(job))
    }

    /// Makes every global job run on `eventLoop` from now on; `false` (and nothing changed) if a hook
    /// was installed already. Call once, before the first task is made.
    @discardableResult
    public static func install(on eventLoop: any EventLoop) -> Bool {
        let slot = motiond_enqueue_global_hook_slot()!
        guard slot.pointee == nil else { return false }
        _ = target.storeIfNil(Target(eventLoop))
        return withUnsafeTemporaryAllocation(of: EnqueueGlobalHook.self, capacity: 1) { hook in
            hook.baseAddress!.initialize(to: { job, _ in ConcurrencyOnNIO.enqueueOnTarget(job) })
            return hook.baseAddress!.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 1) {
                slot.pointee = $0.pointee
                return true
            }
        }
    }
}
