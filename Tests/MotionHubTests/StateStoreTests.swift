import Foundation
import MotionCore
import MotionFusion
import MotionSystem
import SystemPackage
import Synchronization
import Testing

@testable import MotionHub

@Suite struct StateStoreTests {
    func directory() -> String { NSTemporaryDirectory() + "motiond-state-\(getpid())-\(UInt32.random(in: 0...UInt32.max))" }

    let calibration = SensorFusion.Calibration(
        gyroscopeBias: Vector3(x: 0.01, y: -0.02, z: 0.005), gyroscopeBiasSigma: 0.001,
        magnetometerOffset: Vector3(x: 3, y: -2, z: 5), magnetometerOffsetError: 0.4, fieldStrength: 44)

    @Test func savedStateLoadsBackExactly() throws {
        let store = StateStore(directory: directory())
        #expect(try store.load(SensorFusion.Calibration.self) == nil, "nothing saved yet")
        try store.save(calibration)
        #expect(try store.load(SensorFusion.Calibration.self) == calibration)
        let mode = try FileManager.default.attributesOfItem(atPath: store.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func anInterruptedWriteLeavesTheSavedStateIntact() throws {
        let store = StateStore(directory: directory())
        try store.save(calibration)
        // A write cut off before its rename: a half-written temporary file next to the state.
        try Data("{\"gyroscopeBias\":{\"x\":".utf8).write(to: URL(fileURLWithPath: store.path + ".tmp-99999"))
        #expect(try store.load(SensorFusion.Calibration.self) == calibration)
    }

    /// A corrupt state file is an error, and is kept for a person: it is moved aside, so that the
    /// next save (which used to overwrite it) writes a fresh file next to it.
    @Test func aCorruptFileIsAnErrorAndIsKeptAsideNotOverwritten() throws {
        let store = StateStore(directory: directory())
        try FileManager.default.createDirectory(atPath: store.directory, withIntermediateDirectories: true)
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: store.path))
        #expect(throws: StateStore.Corrupt.self) { try store.load(SensorFusion.Calibration.self) }
        try store.save(calibration)
        #expect(try String(contentsOfFile: store.path + ".corrupt", encoding: .utf8) == "garbage")
        #expect(try store.load(SensorFusion.Calibration.self) == calibration)
    }

    /// kill -9 between a save's write and its rename leaves a temporary file (9 of 40 runs left
    /// one): the next start removes it.
    @Test func temporaryFilesOfACutOffSaveAreRemovedAtTheNextLoad() throws {
        let store = StateStore(directory: directory())
        try store.save(calibration)
        for orphan in ["calibration.json.tmp-12345", "calibration.json.tmp-Ab3xYz"] {
            try Data("{".utf8).write(to: URL(fileURLWithPath: store.directory + "/" + orphan))
        }
        #expect(try store.load(SensorFusion.Calibration.self) == calibration)
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory) == ["calibration.json"])
    }

    /// The periodic save and the one at shutdown can run at once; they used to write the same
    /// temporary file. 400 saves from concurrent threads: every one succeeds, the file is whole,
    /// and no temporary file is left.
    @Test func savesAtTheSameTimeEachWriteAFileOfTheirOwn() throws {
        let store = StateStore(directory: directory())
        let failures = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 400) { _ in
            do { try store.save(calibration) } catch { failures.withLock { $0 += 1 } }
        }
        #expect(failures.withLock { $0 } == 0)
        #expect(try store.load(SensorFusion.Calibration.self) == calibration)
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory) == ["calibration.json"])
    }

    /// A rename that fails (here: a directory stands where the state file goes) leaves no
    /// temporary file behind.
    @Test func aFailedRenameLeavesNoTemporaryFile() throws {
        let store = StateStore(directory: directory())
        try FileManager.default.createDirectory(atPath: store.path + "/occupied", withIntermediateDirectories: true)
        #expect(throws: StateStore.Failure.self) { try store.save(calibration) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory) == ["calibration.json"])
    }

    /// The real file calls until a chosen one, and none after it: the disk as a `kill -9` right after
    /// that call leaves it (a killed process makes no clean-up calls either).
    final class KilledAfter: FileOperations, @unchecked Sendable {
        // @unchecked: used by one thread, the test's.
        let real = LocalFiles()
        let killAt: Int
        private(set) var calls = 0
        init(call: Int) { killAt = call }

        /// Whether this call is made (the process still lives); counts it.
        private func lives() -> Bool {
            calls += 1
            return calls <= killAt
        }
        private func alive() throws(Errno) { if !lives() { throw .interrupted } }

        func makeDirectory(_ path: String, permissions: FilePermissions) throws(Errno) {
            try alive(); try real.makeDirectory(path, permissions: permissions)
        }
        func makeTemporaryFile(template: String) throws(Errno) -> (FileDescriptor, String) {
            try alive(); return try real.makeTemporaryFile(template: template)
        }
        func write(_ bytes: [UInt8], to file: FileDescriptor) throws(Errno) {
            // Killed during the write: half of it reached the file.
            if !lives() { try? real.write(Array(bytes.prefix(bytes.count / 2)), to: file); throw .interrupted }
            try real.write(bytes, to: file)
        }
        func synchronize(_ file: FileDescriptor) throws(Errno) { try alive(); try real.synchronize(file) }
        func close(_ file: FileDescriptor) { if lives() { real.close(file) } }
        func rename(_ source: String, to destination: String) throws(Errno) { try alive(); try real.rename(source, to: destination) }
        func remove(_ path: String) { if lives() { real.remove(path) } }
        func openDirectory(_ path: String) throws(Errno) -> FileDescriptor { try alive(); return try real.openDirectory(path) }
        func contents(of path: String, atMost limit: Int) throws(Errno) -> [UInt8]? { try alive(); return try real.contents(of: path, atMost: limit) }
        func entries(of directory: String) -> [String] { lives() ? real.entries(of: directory) : [] }
    }

    /// A save killed after each of its calls in turn (mkdir, mkstemp, a half-done write, fsync,
    /// close, rename, open, fsync and close of the directory): the next start loads the old calibration or
    /// the new one, never a mix or an error, and no temporary file is left once it has loaded.
    @Test func aSaveKilledAfterAnyOfItsCallsLeavesTheOldStateOrTheNew() throws {
        let old = calibration
        var new = calibration
        new.gyroscopeBias = Vector3(x: -0.5, y: 0.25, z: 0.125)
        let complete = KilledAfter(call: .max)
        let directory = directory()
        try StateStore(directory: directory).save(old)
        try StateStore(directory: directory, files: complete).save(new)
        #expect(complete.calls == 9, "the calls of a save: mkdir, mkstemp, write, fsync, close, rename, open, fsync and close of the directory")
        var outcomes: [SensorFusion.Calibration] = []
        var orphansLeft = 0
        for killAt in 0...complete.calls {
            let directory = self.directory()
            try StateStore(directory: directory).save(old)
            try? StateStore(directory: directory, files: KilledAfter(call: killAt)).save(new)
            orphansLeft += try FileManager.default.contentsOfDirectory(atPath: directory).count - 1
            let restarted = StateStore(directory: directory)
            outcomes.append(try #require(try restarted.load(SensorFusion.Calibration.self), "killed after call \(killAt)"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["calibration.json"], "killed after call \(killAt)")
        }
        #expect(outcomes.allSatisfy { $0 == old || $0 == new })
        #expect(outcomes.first == old && outcomes.last == new)
        #expect(orphansLeft >= 4, "kills between mkstemp and rename leave a temporary file for the next start to remove")
    }

    @Test func anUnwritableDirectoryIsAnErrorThatNamesIt() {
        let store = StateStore(directory: "/proc/motiond-cannot-be-here")
        do {
            try store.save(calibration)
            Issue.record("saved into /proc")
        } catch {
            #expect("\(error)".contains("/proc/motiond-cannot-be-here"))
        }
    }
}
