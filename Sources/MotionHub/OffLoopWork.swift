import MotionSystem
import NIOCore
import Synchronization

/// Blocking work the hub hands off its loop (opening and closing a capture, writing the calibration,
/// paging out), each job on a thread made for it that ends with it, counted so that shutdown can wait
/// for all of it: a job that finished after the event loop had shut down would hand its result to a
/// loop that is gone, which NIO treats as a fatal error.
///
/// A thread per job, not a pool: the jobs are rare (a capture's opening, a save a minute), a daemon
/// at rest keeps no idle worker (issue 63: four threads at rest), and no job can wait for ever on
/// work queued behind it (a capture's stop waits for its opening; on a pool of two, two such stops
/// waited for openings queued behind them for good: issue 62's review).
///
/// A test of the hub on an embedded or testing event loop makes its hub with `runner: .inline`
/// (`Hub.init`'s `offLoopWork`): each job then runs at once on the loop's thread, and its completion
/// on the loop's next turn (`EmbeddedEventLoop.run()`, `NIOAsyncTestingEventLoop.run()`), so that a
/// save, a page-out or a capture's stop is done when the test has run the loop, with no thread in
/// between.
package final class OffLoopWork: Sendable {
    /// Where the jobs run.
    package enum Runner: Sendable {
        /// Each on a thread of its own, the completion back on the loop: the daemon's.
        case threads
        /// On the calling thread at once, the completion on the loop's next turn: a test's.
        case inline
    }

    private let eventLoop: any EventLoop
    private let runner: Runner
    private let underWay = Atomic<Int>(0)

    /// Work whose completions run on `eventLoop`, its jobs run by `runner`.
    package init(eventLoop: any EventLoop, runner: Runner = .threads) {
        self.eventLoop = eventLoop
        self.runner = runner
    }

    /// Runs `job` off the loop on a thread called `name` (or inline, `Runner.inline`), then
    /// `completion` with its result on the loop. The job counts as under way until `completion` has
    /// returned, so nothing of it reaches the loop after `waitUntilDone`. Without a thread to be had
    /// (the process's limit), `completion` gets the errno and the job does not run.
    func run<Value: Sendable>(
        named name: String = "off loop", _ job: @escaping @Sendable () throws -> Value,
        then completion: @escaping (Result<Value, any Error>) -> Void
    ) {
        underWay.add(1, ordering: .relaxed)
        let completion = NIOLoopBound(completion, eventLoop: eventLoop)
        let eventLoop = eventLoop
        let finish: @Sendable (Result<Value, any Error>) -> Void = { [self] result in
            eventLoop.execute { [self] in
                completion.value(result)
                underWay.subtract(1, ordering: .releasing)
            }
        }
        switch runner {
        case .threads:
            if let failure = OSThread.startDetached(name: name, body: { finish(Result { try job() }) }) {
                finish(.failure(failure))
            }
        case .inline:
            // On a later turn, as from a thread: the caller's state is as it left it when the completion runs.
            finish(Result { try job() })
        }
    }

    /// Waits, at most `seconds`, for the jobs under way (at shutdown). Not on the loop: the jobs end
    /// there. Inline work returns at once: its jobs are done, and their completions run when the loop
    /// runs next (the test's own call).
    package func waitUntilDone(seconds: Double = 5) {
        guard runner == .threads else { return }
        precondition(!eventLoop.inEventLoop)
        let deadline = Syscall.monotonicNanoseconds() + Int64(seconds * 1e9)
        while underWay.load(ordering: .acquiring) > 0 && Syscall.monotonicNanoseconds() < deadline {
            Syscall.sleep(nanoseconds: 1_000_000)
        }
    }
}

extension EventLoop {
    /// Runs `job` on a thread called `name` made for it, which ends with it, and completes the future
    /// on this loop with its result (the errno if no thread can be made): for the blocking steps of a
    /// capture (libiio's scan of sysfs, a buffer's disable, an HID hub's feature report) that the loop
    /// must not wait for.
    package func runOnThreadOfItsOwn<Value: Sendable>(
        named name: String, _ job: @escaping @Sendable () throws -> Value
    ) -> EventLoopFuture<Value> {
        let promise = makePromise(of: Value.self)
        if let failure = OSThread.startDetached(name: name, body: { promise.completeWith(Result { try job() }) }) {
            promise.fail(failure)
        }
        return promise.futureResult
    }
}
