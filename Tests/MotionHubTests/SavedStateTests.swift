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
        func makeTemporaryFile(template: String) throws(Errno) -> (SystemPackage.FileDescriptor, String) { try real.makeTemporaryFile(template: template) }
        func write(_ bytes: [UInt8], to file: SystemPackage.FileDescriptor) throws(Errno) {
            writes += 1
            if full { throw .noSpace }
            try real.write(bytes, to: file)
        }
        func synchronize(_ file: SystemPackage.FileDescriptor) throws(Errno) { try real.synchronize(file) }
        func close(_ file: SystemPackage.FileDescriptor) { real.close(file) }
        func rename(_ source: String, to destination: String) throws(Errno) { try real.rename(source, to: destination) }
        func remove(_ path: String) { real.remove(path) }
        func openDirectory(_ path: String) throws(Errno) -> SystemPackage.FileDescriptor { try real.openDirectory(path) }
        func contents(of path: String, atMost limit: Int) throws(Errno) -> [UInt8]? { try real.contents(of: path, atMost: limit) }
        func entries(of directory: String) -> [String] { real.entries(of: directory) }
    }

    @Test func aSaveTheDiskRefusedIsNotCountedAsSavedAndTheNextWritesTheLatest() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let directory = NSTemporaryDirectory() + "motiond-saved-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let disk = FullDisk()
        let offLoop = OffLoopWork(eventLoop: loop)
        let state = try loop.submit {
            SavedState<[Int]>("numbers", store: StateStore(directory: directory, name: "n.json", files: disk), offLoop: offLoop, logger: Logger(label: "test"))
        }.wait()

        _ = try loop.submit { state.save([1]) }.wait()
        offLoop.waitUntilDone()
        #expect(try loop.submit { state.isSaved }.wait() == false, "the write failed: not saved")

        disk.full = false
        _ = try loop.submit { state.save([1, 2]) }.wait()
        offLoop.waitUntilDone()
        #expect(try loop.submit { state.isSaved }.wait())
        #expect(try StateStore(directory: directory, name: "n.json").load([Int].self) == [1, 2])
    }

    /// A device at rest gives the same calibration at every periodic save: written once, not every
    /// minute. A value the disk refused is written again, though it did not change.
    @Test func aValueAlreadyOnDiskIsNotWrittenAgainButOneRefusedIs() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let directory = NSTemporaryDirectory() + "motiond-saved-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let disk = FullDisk()
        let offLoop = OffLoopWork(eventLoop: loop)
        let state = try loop.submit {
            SavedState<[Int]>("numbers", store: StateStore(directory: directory, name: "n.json", files: disk), offLoop: offLoop, logger: Logger(label: "test"))
        }.wait()
        func save(_ value: [Int]) throws {
            _ = try loop.submit { state.save(value) }.wait()
            offLoop.waitUntilDone()
        }

        try save([1])
        try save([1])
        #expect(disk.writes == 2, "refused, so written again")
        disk.full = false
        try save([1])
        #expect(disk.writes == 3)
        #expect(try loop.submit { state.isSaved }.wait())
        try save([1])
        try save([1])
        #expect(disk.writes == 3, "on disk already: not written again")
        try save([1, 2])
        #expect(disk.writes == 4)
        #expect(try StateStore(directory: directory, name: "n.json").load([Int].self) == [1, 2])
    }
}
