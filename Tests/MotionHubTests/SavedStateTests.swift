import Foundation
import Logging
import MotionSystem
import NIOCore
import NIOPosix
import SystemPackage
import Synchronization
import Testing

@testable import MotionHub

/// What is kept across restarts is not lost to a disk that refuses a write: the owner is told it is
/// not saved, and the next save writes the latest value.
@Suite struct SavedStateTests {
    /// The real file calls, but writes fail while `full` is set: a full disk (ENOSPC).
    final class FullDisk: FileOperations, @unchecked Sendable {
        // @unchecked: `full` is set by the test between saves, which it waits for.
        let real = LocalFiles()
        var full = true
        /// Files written (or refused).
        var writes = 0
        func makeDirectory(_ path: String, permissions: FilePermissions) throws(Errno) { try real.makeDirectory(path, permissions: permissions) }
        func makeTemporaryFile(template: String) throws(Errno) -> TemporaryFile { try real.makeTemporaryFile(template: template) }
        func write(_ bytes: [UInt8], to file: borrowing OwnedDescriptor) throws(Errno) {
            writes += 1
            if full { throw .noSpace }
            try real.write(bytes, to: file)
        }
        func synchronize(_ file: borrowing OwnedDescriptor) throws(Errno) { try real.synchronize(file) }
        func close(_ file: consuming OwnedDescriptor) { real.close(file) }
        func rename(_ source: String, to destination: String) throws(Errno) { try real.rename(source, to: destination) }
        func remove(_ path: String) { real.remove(path) }
        func openDirectory(_ path: String) throws(Errno) -> OwnedDescriptor { try real.openDirectory(path) }
        func regularFileContents(of path: String, atMost limit: Int) throws(Errno) -> RegularFileContents {
            try real.regularFileContents(of: path, atMost: limit)
        }
        func entries(of directory: String) -> [String] { real.entries(of: directory) }
    }

    /// A `SavedState` of numbers on `disk`, its loop and its own directory, removed at the end.
    final class Harness {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let directory = NSTemporaryDirectory() + "motiond-saved-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let disk = FullDisk()
        let offLoop: OffLoopWork
        let state: SavedState<[Int]>

        init() throws {
            offLoop = OffLoopWork(eventLoop: group.next())
            let (directory, disk, offLoop) = (directory, disk, offLoop)
            state = try group.next().submit {
                SavedState<[Int]>("numbers", store: StateStore(directory: directory, name: "n.json", files: disk), offLoop: offLoop, logger: Logger(label: "test"))
            }.wait()
        }

        deinit {
            try? group.syncShutdownGracefully()
            try? FileManager.default.removeItem(atPath: directory)
        }

        /// Saves `value` and waits for the write, if there is one.
        func save(_ value: [Int]) throws {
            let state = state
            _ = try group.next().submit { state.save(value) }.wait()
            offLoop.waitUntilDone()
        }

        var isSaved: Bool {
            get throws {
                let state = state
                return try group.next().submit { state.isSaved }.wait()
            }
        }

        var onDisk: [Int]? { get throws { try StateStore(directory: directory, name: "n.json").load([Int].self) } }
    }

    @Test func aSaveTheDiskRefusedIsNotCountedAsSavedAndTheNextWritesTheLatest() throws {
        let harness = try Harness()
        try harness.save([1])
        #expect(try harness.isSaved == false, "the write failed: not saved")

        harness.disk.full = false
        try harness.save([1, 2])
        #expect(try harness.isSaved)
        #expect(try harness.onDisk == [1, 2])
    }

    /// A device at rest gives the same calibration at every periodic save: written once, not every
    /// minute. A value the disk refused is written again, though it did not change.
    @Test func aValueAlreadyOnDiskIsNotWrittenAgainButOneRefusedIs() throws {
        let harness = try Harness()
        try harness.save([1])
        try harness.save([1])
        #expect(harness.disk.writes == 2, "refused, so written again")
        harness.disk.full = false
        try harness.save([1])
        #expect(harness.disk.writes == 3)
        #expect(try harness.isSaved)
        try harness.save([1])
        try harness.save([1])
        #expect(harness.disk.writes == 3, "on disk already: not written again")
        try harness.save([1, 2])
        #expect(harness.disk.writes == 4)
        #expect(try harness.onDisk == [1, 2])
    }

    /// Without a state directory nothing is written, and `save` says so (the hub pages out after a
    /// write: it would have done so every minute for nothing).
    @Test func withoutAStoreNothingIsWritten() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let wrote = try loop.submit {
            let state = SavedState<[Int]>("numbers", store: nil, offLoop: OffLoopWork(eventLoop: loop), logger: Logger(label: "test"))
            return [state.save([1]), state.save([1]), state.save([2])]
        }.wait()
        #expect(wrote == [false, false, false])
    }
}
