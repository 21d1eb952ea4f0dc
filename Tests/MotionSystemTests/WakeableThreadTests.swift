import Foundation
import Synchronization
import Testing

@testable import MotionSystem

#if canImport(Glibc)
import Glibc
#endif

@Suite struct OwnedDescriptorTests {
    final class Owner {
        let file: OwnedDescriptor
        init(_ file: consuming OwnedDescriptor) { self.file = file }
    }

    /// A file of this test's own, and its inode: a descriptor another test opens meanwhile may take
    /// the number over at once, but it does not name this file.
    static func ownFile() throws -> (path: String, inode: UInt64) {
        let path = NSTemporaryDirectory() + "owned-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        return (path, try #require((try FileManager.default.attributesOfItem(atPath: path))[.systemFileNumber] as? UInt64))
    }

    /// Whether `descriptor` is open on the file of inode `inode`.
    static func names(_ descriptor: Int32, _ inode: UInt64) -> Bool {
        var status = stat()
        return fstat(descriptor, &status) == 0 && UInt64(status.st_ino) == inode
    }

    @Test func theDescriptorClosesWhenItsOwnerGoes() throws {
        let file = try Self.ownFile()
        defer { try? FileManager.default.removeItem(atPath: file.path) }
        var owner: Owner? = Owner(try Syscall.openReadOnly(file.path))
        let descriptor = try #require(owner).file.rawValue
        #expect(Self.names(descriptor, file.inode))
        owner = nil
        #expect(!Self.names(descriptor, file.inode))
    }

    /// A call that makes a descriptor hands out its owner, never a bare number: a duplicate closes
    /// when its owner goes, and the file duplicated stays open.
    @Test func madeDescriptorsCloseWithTheirOwners() throws {
        let file = try Self.ownFile()
        defer { try? FileManager.default.removeItem(atPath: file.path) }
        let original = try Syscall.openReadOnly(file.path)
        var copy: Owner? = Owner(try Syscall.duplicate(original.rawValue))
        let duplicated = try #require(copy).file.rawValue
        #expect(duplicated != original.rawValue && Self.names(duplicated, file.inode))
        copy = nil
        #expect(!Self.names(duplicated, file.inode) && Self.names(original.rawValue, file.inode))
    }

    @Test func aDescriptorTakenIsNotClosed() throws {
        let file = try Self.ownFile()
        defer { try? FileManager.default.removeItem(atPath: file.path) }
        let owned = try Syscall.openReadOnly(file.path)
        let descriptor = owned.take()
        #expect(Self.names(descriptor, file.inode))
        _ = close(descriptor)  // the taker's job now
        #expect(!Self.names(descriptor, file.inode))
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

    /// A stop asked before the start (a capture stopped off the loop between keeping its poller and
    /// starting it): the thread never runs its body, so nothing configures a device after the stop.
    @Test func aThreadStoppedBeforeItStartsNeverRunsItsBody() throws {
        let thread = try WakeableThread(name: "test")
        let ran = Atomic<Bool>(false)
        thread.requestStop()
        #expect(thread.start { ran.store(true, ordering: .releasing) } == nil, "not started is no failure")
        // Joins the body had it run: its mark is then seen.
        thread.stop()
        let bodyRan = ran.load(ordering: .acquiring)
        #expect(!bodyRan)
    }

    /// The eventfd is owned: it closes once the thread and its owner have both let it go. Told by a
    /// mark in its count, not by its number: a test running beside this one may open a descriptor
    /// that takes the number over at once.
    @Test func theWakeDescriptorClosesWithTheThread() throws {
        var thread: WakeableThread? = try WakeableThread(name: "test")
        let descriptor = try #require(thread).wakeup.rawValue
        #expect(thread?.start {} == nil)
        thread?.stop()
        // The mark is added to what the count holds (stop's own wake, not read by the ended thread).
        let before = try #require(Self.eventCount(descriptor), "open after stop, while its owner holds it")
        var mark: UInt64 = 0x5EED_CAFE
        #expect(write(descriptor, &mark, 8) == 8)
        #expect(Self.eventCount(descriptor) == before + mark)
        thread = nil
        #expect(Self.eventCount(descriptor) != before + mark, "closed with its owner")
    }

    /// The count of the eventfd at `descriptor` (proc(5)'s fdinfo, `eventfd-count`, hex); nil when
    /// the number names no eventfd.
    static func eventCount(_ descriptor: Int32) -> UInt64? {
        guard let info = FileHandle(forReadingAtPath: "/proc/self/fdinfo/\(descriptor)")?.readDataToEndOfFile() else { return nil }
        for line in String(decoding: info, as: UTF8.self).split(separator: "\n") where line.hasPrefix("eventfd-count:") {
            return UInt64(line.dropFirst("eventfd-count:".count).trimmingCharacters(in: .whitespaces), radix: 16)
        }
        return nil
    }
}
