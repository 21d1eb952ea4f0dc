import NIOCore
import NIOEmbedded
import NIOPosix
import Synchronization
import Testing
import TestSupport

@testable import MotionHub

#if canImport(Glibc)
import Glibc
#endif

/// The names of this process's threads.
private func threadNames() -> [String] { TestSupport.threadNames(ofProcess: getpid()) }

@Suite struct OffLoopWorkTests {
    /// A capture's stop waits for its opening, which runs off the loop too. On a pool, as many stops as
    /// it had threads, each waiting for an opening queued behind them, waited for ever (issue 62's
    /// review: two captures stopped for a sleep while each re-armed). Each on a thread of its own,
    /// however many there are, they finish.
    @Test func jobsThatWaitForOtherJobsFinish() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let work = OffLoopWork(eventLoop: loop)
        // More than NIO's pool had threads (the machine's cores).
        let stops = System.coreCount + 1
        let stopped = Mutex(0)
        try loop.submit {
            let openings = (0..<stops).map { _ in loop.makePromise(of: Void.self) }
            for (index, opened) in openings.enumerated() {
                work.run(named: "stop \(index)", { try opened.futureResult.wait() }, then: { _ in stopped.withLock { $0 += 1 } })
            }
            // The openings, begun after every stop that waits for them.
            for opened in openings { loop.runOnThreadOfItsOwn(named: "open") {}.cascade(to: opened) }
        }.wait()
        work.waitUntilDone(seconds: 10)
        #expect(stopped.withLock { $0 } == stops)
    }

    /// Issue 63: a daemon at rest keeps no idle worker. Each job's thread, named for it, is gone from
    /// /proc/self/task (proc(5)) once the job is done.
    @Test func noThreadOutlivesItsJob() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let work = OffLoopWork(eventLoop: loop)
        let name = "job \(getpid() % 10_000)"
        let ran = try loop.flatSubmit {
            let ran = loop.makePromise(of: Int.self)
            work.run(named: name, { threadNames().filter { $0 == name }.count }, then: { ran.completeWith($0) })
            return ran.futureResult
        }.wait()
        #expect(ran == 1, "the job ran on a thread of its own, named for it")
        work.waitUntilDone()
        // A detached thread ends just after it hands its result over: waited for, bounded.
        #expect(throws: Never.self, "no thread called \(name) is left") { try waitUntil { !threadNames().contains(name) } }
    }

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

    /// The hub test kit's: inline work runs its job at once on the calling thread (the loop's) and
    /// its completion on the loop's next turn, counted as under way until then; `waitUntilDone`
    /// returns at once (nothing runs elsewhere), even on the loop.
    @Test func inlineWorkRunsItsJobAtOnceAndItsCompletionWhenTheLoopRuns() throws {
        let loop = EmbeddedEventLoop()
        let work = OffLoopWork(eventLoop: loop, runner: .inline)
        let steps = Mutex<[String]>([])
        work.run({ steps.withLock { $0.append("job") } }, then: { _ in steps.withLock { $0.append("completion") } })
        steps.withLock { $0.append("returned") }
        work.waitUntilDone()
        #expect(steps.withLock { $0 } == ["job", "returned"], "the job at once, the completion waiting for the loop")
        loop.run()
        #expect(steps.withLock { $0 } == ["job", "returned", "completion"])
        try loop.syncShutdownGracefully()
    }
}
