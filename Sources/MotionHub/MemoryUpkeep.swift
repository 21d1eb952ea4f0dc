import Logging
import MotionSystem
import NIOCore

/// Gives memory back while the daemon idles (`ResidentMemory`): the heap's free pages once clients
/// that held many bytes have left (off the loop, `OffLoopWork`), and the process's code pages once the
/// sensors have run as planned for `pageOutDelay` (on the loop: about 15 ms of `madvise`, which
/// drops clean pages and at most queues written ones for swap, where a thread made for it would cost
/// the process four more wake-ups at each settle: issue 63). Confined to the hub's event loop.
final class MemoryUpkeep: @unchecked Sendable {
    // @unchecked: confined to the hub's event loop, as the closures it schedules there are.
    /// How long the sensors must run as planned (or none run) before the code that started, stopped
    /// or served what ran before is paged out: start-up, a client's coming and going; the steady
    /// state's own code faults back in within its first samples.
    static let pageOutDelay = TimeAmount.seconds(5)
    /// How long after the last client that held many bytes left the heap is trimmed: 40 that left
    /// together cost one trim.
    static let heapReleaseDelay = TimeAmount.seconds(1)

    private let eventLoop: any EventLoop
    private let offLoop: OffLoopWork
    private let logger: Logger
    /// Gives the process's code pages back once the sensors settle (`ResidentMemory.releaseFilePages`:
    /// the daemon's, whose executable no other process maps); nil: not a process that hosts hubs among
    /// other work.
    private let pageOut: (@Sendable () -> Result<Int, Errno>)?
    /// Whether a failing page-out was said: one that keeps failing (a kernel without `MADV_PAGEOUT`)
    /// is said once, not at every change of the plan, until one succeeds.
    private var saidPageOutFails = false
    /// The heap's trim due after clients that held many bytes left.
    private var heapRelease: Scheduled<Void>?
    /// The page-out due once the plan has held for `pageOutDelay`.
    private var pageOutDue: Scheduled<Void>?
    /// Set by `stop`: nothing more is scheduled (shutdown).
    private var stopped = false

    init(eventLoop: any EventLoop, offLoop: OffLoopWork, logger: Logger, pageOut: (@Sendable () -> Result<Int, Errno>)?) {
        self.eventLoop = eventLoop
        self.offLoop = offLoop
        self.logger = logger
        self.pageOut = pageOut
    }

    /// Gives the heap's free memory back `heapReleaseDelay` after the last call: glibc otherwise keeps
    /// it resident.
    func releaseFreeHeapSoon() {
        heapRelease?.cancel()
        heapRelease = eventLoop.scheduleTask(in: Self.heapReleaseDelay) { [self] in
            heapRelease = nil
            guard !stopped else { return }
            offLoop.run({ ResidentMemory.releaseFreeHeap() }, then: { _ in })
        }
    }

    /// (Re)schedules the page-out for `pageOutDelay` from now, where this process pages out: the
    /// sensors' plan changed, or a write brought the encoder's code back (3 MB of a screen-rotation
    /// daemon's 14.7).
    func pageOutOnceSettled() {
        guard let release = pageOut, !stopped else { return }
        pageOutDue?.cancel()
        pageOutDue = eventLoop.scheduleTask(in: Self.pageOutDelay) { [self] in
            pageOutDue = nil
            guard !stopped else { return }
            switch release() {
            case .success: saidPageOutFails = false
            case .failure(let error) where !saidPageOutFails:
                saidPageOutFails = true
                logger.info("code pages stay resident", metadata: ["error": "\(error)"])
            case .failure: break
            }
        }
    }

    /// Cancels what is due and schedules nothing more (at shutdown).
    func stop() {
        stopped = true
        pageOutDue?.cancel()
        heapRelease?.cancel()
    }
}
