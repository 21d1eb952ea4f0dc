import MotionSystem
import NIOCore
import NIOPosix
import Synchronization

/// Blocking work the hub hands to NIO's thread pool (closing a capture, writing the calibration,
/// paging out), counted so that shutdown can wait for all of it: a job that finished after the event
/// loop had shut down would hand its result to a loop that is gone, which NIO treats as a fatal error.
///
/// A test of the hub on an embedded or testing event loop makes its hub with `runner: .inline`
/// (`Hub.init`'s `offLoopWork`): each job then runs at once on the loop's thread, and its completion
/// on the loop's next turn (`EmbeddedEventLoop.run()`, `NIOAsyncTestingEventLoop.run()`), so that a
/// save, a page-out or a capture's stop is done when the test has run the loop, with no thread in
/// between.
package final class OffLoopWork: Sendable {
    /// Where the jobs run.
    package enum Runner: Sendable {
        /// NIO's thread pool, the completion back on the loop: the daemon's.
        case threadPool
        /// On the calling thread at once, the completion on the loop's next turn: a test's.
        case inline
    }

    private let eventLoop: any EventLoop
    private let runner: Runner
    private let underWay = Atomic<Int>(0)

    /// Work whose completions run on `eventLoop`, its jobs run by `runner`.
    package init(eventLoop: any EventLoop, runner: Runner = .threadPool) {
        self.eventLoop = eventLoop
        self.runner = runner
    }

    /// Runs `job` off the loop (or inline, `Runner.inline`), then `completion` with its result on the
    /// loop. The job counts as under way until `completion` has returned, so nothing of it reaches the
    /// loop after `waitUntilDone`.
    func run<Value: Sendable>(
        _ job: @escaping @Sendable () throws -> Value, then completion: @escaping (Result<Value, any Error>) -> Void
    ) {
        underWay.add(1, ordering: .relaxed)
        let completion = NIOLoopBound(completion, eventLoop: eventLoop)
        switch runner {
        case .threadPool:
            NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop, job).whenComplete { [self] result in
                completion.value(result)
                underWay.subtract(1, ordering: .releasing)
            }
        case .inline:
            // On a later turn, as from the pool: the caller's state is as it left it when the completion runs.
            let result = Result { try job() }
            eventLoop.execute { [self] in
                completion.value(result)
                underWay.subtract(1, ordering: .releasing)
            }
        }
    }

    /// As `run`, but on a thread made for the job, which ends with it: for a job that waits for work on
    /// NIO's pool (a capture's stop waits for the capture's opening there). On the pool itself, as many
    /// such jobs as the pool has threads would wait for work queued behind them for ever (two captures
    /// stopped for a sleep while each had an opening queued). No thread is kept at rest.
    func runOnThreadOfItsOwn<Value: Sendable>(
        named name: String, _ job: @escaping @Sendable () throws -> Value, then completion: @escaping (Result<Value, any Error>) -> Void
    ) {
        guard runner == .threadPool else { return run(job, then: completion) }
        underWay.add(1, ordering: .relaxed)
        let completion = NIOLoopBound(completion, eventLoop: eventLoop)
        let eventLoop = eventLoop
        let failure = OSThread.startDetached(name: name) { [self] in
            let result = Result { try job() }
            eventLoop.execute { [self] in
                completion.value(result)
                underWay.subtract(1, ordering: .releasing)
            }
        }
        if failure != nil {
            // No thread to be had (the process's limit): on the pool, as before.
            underWay.subtract(1, ordering: .releasing)
            run(job, then: { completion.value($0) })
        }
    }

    /// Waits, at most `seconds`, for the jobs under way (at shutdown). Not on the loop: the jobs end
    /// there. Inline work returns at once: its jobs are done, and their completions run when the loop
    /// runs next (the test's own call).
    package func waitUntilDone(seconds: Double = 5) {
        guard runner == .threadPool else { return }
        precondition(!eventLoop.inEventLoop)
        let deadline = Syscall.monotonicNanoseconds() + Int64(seconds * 1e9)
        while underWay.load(ordering: .acquiring) > 0 && Syscall.monotonicNanoseconds() < deadline {
            Syscall.sleep(nanoseconds: 1_000_000)
        }
    }
}
