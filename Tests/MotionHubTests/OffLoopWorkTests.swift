import NIOCore
import NIOPosix
import Testing

@testable import MotionHub

@Suite struct OffLoopWorkTests {
    /// Shutdown relies on this: once `waitUntilDone` returns, every job has handed its result to the
    /// loop, so shutting the loop down cannot strand one (NIO's fatal error for a loop that is gone).
    @Test func waitUntilDoneReturnsOnlyAfterEachJobsCompletionRanOnTheLoop() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let work = OffLoopWork(eventLoop: loop)
        let completed = NIOLoopBoundBox.makeBoxSendingValue([String](), eventLoop: loop)
        try loop.submit {
            for delay in [50_000, 300_000] as [UInt32] {
                work.run({ usleep(delay); return delay }, then: { result in
                    completed.value.append("\(try! result.get()) on loop: \(loop.inEventLoop)")
                })
            }
        }.wait()
        work.waitUntilDone()
        // Queued on the loop now: had waitUntilDone returned before the 0.3 s job ended, this would miss it.
        let seen = try loop.submit { completed.value }.wait()
        #expect(seen == ["50000 on loop: true", "300000 on loop: true"])
        try group.syncShutdownGracefully()
    }

    @Test func aJobsErrorReachesItsCompletion() throws {
        struct Failed: Error {}
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let work = OffLoopWork(eventLoop: loop)
        let failures = NIOLoopBoundBox.makeBoxSendingValue(0, eventLoop: loop)
        try loop.submit {
            work.run({ throw Failed() }, then: { (result: Result<Void, any Error>) in
                if case .failure(let error) = result, error is Failed { failures.value += 1 }
            })
        }.wait()
        work.waitUntilDone()
        #expect(try loop.submit { failures.value }.wait() == 1)
        try group.syncShutdownGracefully()
    }
}
