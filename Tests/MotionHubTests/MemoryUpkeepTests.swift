import HubTestKit
import Logging
import MotionSystem
import NIOCore
import NIOEmbedded
import Synchronization
import SystemPackage
import Testing

@testable import MotionHub

@Suite struct MemoryUpkeepTests {
    /// A page-out that keeps failing (a kernel without `MADV_PAGEOUT` answers EINVAL every time) is
    /// said once, not at every change of the sensors' plan; once one succeeds, a later failure is
    /// said again.
    @Test func aFailingPageOutIsSaidOnceWhileItKeepsFailing() throws {
        let loop = EmbeddedEventLoop()
        let log = RecordedLog()
        let fails = Mutex(true)
        let upkeep = MemoryUpkeep(
            eventLoop: loop, offLoop: OffLoopWork(eventLoop: loop, runner: .inline), logger: Logger(label: "test") { _ in log },
            pageOut: { fails.withLock { $0 } ? .failure(.invalidArgument) : .success(4096) })
        func settle() {
            upkeep.pageOutOnceSettled()
            loop.advanceTime(by: MemoryUpkeep.pageOutDelay)
            loop.run()
        }
        for _ in 0..<3 { settle() }
        #expect(log.count("code pages stay resident") == 1)
        fails.withLock { $0 = false }
        settle()
        fails.withLock { $0 = true }
        settle()
        #expect(log.count("code pages stay resident") == 2)
        upkeep.stop()
        try loop.syncShutdownGracefully()
    }
}
