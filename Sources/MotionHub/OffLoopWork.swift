import MotionSystem
import NIOCore
import NIOPosix
import Synchronization

/// Blocking work the hub hands to NIO's thread pool (closing a capture, writing the calibration),
/// counted so that shutdown can wait for all of it: a job that finished after the event loop had
/// shut down would hand its result to a loop that is gone, which NIO treats as a fatal error.
final class OffLoopWork: Sendable {
    private let eventLoop: any EventLoop
    private let underWay = Atomic<Int>(0)

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Runs `job` on the thread pool, then `completion` with its result on the loop. The job counts as
    /// under way until `completion` has returned, so nothing of it reaches the loop after `waitUntilDone`.
    func run<Value: Sendable>(
        _ job: @escaping @Sendable () throws -> Value, then completion: @escaping (Result<Value, any Error>) -> Void
    ) {
        underWay.add(1, ordering: .relaxed)
        let completion = NIOLoopBound(completion, eventLoop: eventLoop)
        NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop, job).whenComplete { [self] result in
            completion.value(result)
            underWay.subtract(1, ordering: .releasing)
        }
    }

    /// Waits, at most `seconds`, for the jobs under way (at shutdown). Not on the loop: the jobs end there.
    func waitUntilDone(seconds: Double = 5) {
        precondition(!eventLoop.inEventLoop)
        let deadline = Syscall.monotonicNanoseconds() + Int64(seconds * 1e9)
        while underWay.load(ordering: .acquiring) > 0 && Syscall.monotonicNanoseconds() < deadline {
            Syscall.sleep(nanoseconds: 1_000_000)
        }
    }
}
