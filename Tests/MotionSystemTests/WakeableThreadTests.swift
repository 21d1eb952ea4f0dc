import Synchronization
import Testing

@testable import MotionSystem

#if canImport(Glibc)
import Glibc
#endif

@Suite struct OwnedDescriptorTests {
    /// Whether `descriptor` is open in this process: `fcntl(F_GETFD)` fails with EBADF once it is not.
    static func isOpen(_ descriptor: Int32) -> Bool {
        fcntl(descriptor, F_GETFD) >= 0 || errno != EBADF
    }

    final class Owner {
        let file: OwnedDescriptor
        init(_ file: consuming OwnedDescriptor) { self.file = file }
    }

    @Test func theDescriptorClosesWhenItsOwnerGoes() throws {
        var owner: Owner? = Owner(try OwnedDescriptor(openingForReading: "/dev/null"))
        let descriptor = try #require(owner).file.rawValue
        #expect(Self.isOpen(descriptor))
        owner = nil
        #expect(!Self.isOpen(descriptor))
    }

    @Test func aDescriptorTakenIsNotClosed() throws {
        let owned = try OwnedDescriptor(openingForReading: "/dev/null")
        let descriptor = owned.take()
        #expect(Self.isOpen(descriptor))
        Syscall.close(descriptor)
        #expect(!Self.isOpen(descriptor))
    }
}

@Suite struct WakeableThreadTests {
    @Test func aWakeEndsTheWaitAndIsConsumed() throws {
        let thread = try WakeableThread(name: "test")
        thread.wake()
        thread.wake()
        #expect(try thread.wait(timeoutMilliseconds: -1).get() == .init(happened: 0, woken: true))
        // Two wakes before the wait were one: nothing is left.
        #expect(try thread.wait(timeoutMilliseconds: 0).get() == .init(happened: 0, woken: false))
    }

    @Test func theCallersDescriptorIsPolledBesideTheWake() throws {
        let thread = try WakeableThread(name: "test")
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        let read = OwnedDescriptor(ends[0])
        let write = OwnedDescriptor(ends[1])
        #expect(try thread.wait(on: read.rawValue, timeoutMilliseconds: 0).get() == .init(happened: 0, woken: false))
        _ = Syscall.write(write.rawValue, [1])
        #expect(try thread.wait(on: read.rawValue, timeoutMilliseconds: -1).get() == .init(happened: Int16(POLLIN), woken: false))
    }

    /// The body waits forever but for its wakes: each is seen, and `stop` ends and joins it.
    @Test func theThreadWakesAndStopsOnRequest() throws {
        let thread = try WakeableThread(name: "test")
        let wakes = Atomic<Int>(0)
        let ended = Atomic<Bool>(false)
        let waiting = Mutex<[Int]>([])
        #expect(thread.start {
            while !thread.isStopping {
                guard case .success(let wakeup) = thread.wait(timeoutMilliseconds: -1) else { break }
                if wakeup.woken { waiting.withLock { $0.append(wakes.add(1, ordering: .relaxed).newValue) } }
            }
            ended.store(true, ordering: .relaxed)
        } == nil)
        thread.wake()
        // The wake is seen without a sleep: the thread's own wait says so (a spin on its count).
        while wakes.load(ordering: .relaxed) == 0 {}
        let endedBeforeStop = ended.load(ordering: .relaxed)
        #expect(!endedBeforeStop)
        thread.stop()
        let endedAtStop = ended.load(ordering: .relaxed)
        #expect(endedAtStop)
    }

    /// A thread that ends by itself, then is stopped: `stop` returns at once (nothing to join twice).
    @Test func aThreadThatEndedByItselfIsStoppedAtOnce() throws {
        let thread = try WakeableThread(name: "test")
        let ended = Atomic<Bool>(false)
        #expect(thread.start { ended.store(true, ordering: .releasing) } == nil)
        while !ended.load(ordering: .acquiring) {}
        thread.stop()
        thread.stop()
    }

    /// The eventfd is owned: it closes once the thread and its owner have both let it go.
    @Test func theWakeDescriptorClosesWithTheThread() throws {
        var thread: WakeableThread? = try WakeableThread(name: "test")
        let descriptor = try #require(thread).wakeup.rawValue
        #expect(thread?.start {} == nil)
        thread?.stop()
        #expect(OwnedDescriptorTests.isOpen(descriptor))
        thread = nil
        #expect(!OwnedDescriptorTests.isOpen(descriptor))
    }
}
