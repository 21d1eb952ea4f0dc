import Foundation
import Logging
import MotionCore
import MotionFusion
import MotionSystem
import MotionWire
import NIOCore
import NIOPosix
import SystemPackage
import Synchronization
import TestSupport
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
        func makeTemporaryFile(template: String) throws(Errno) -> TemporaryFile {
            try alive(); return try real.makeTemporaryFile(template: template)
        }
        func write(_ bytes: [UInt8], to file: borrowing OwnedDescriptor) throws(Errno) {
            // Killed during the write: half of it reached the file.
            if !lives() { try? real.write(Array(bytes.prefix(bytes.count / 2)), to: file); throw .interrupted }
            try real.write(bytes, to: file)
        }
        func synchronize(_ file: borrowing OwnedDescriptor) throws(Errno) { try alive(); try real.synchronize(file) }
        func close(_ file: consuming OwnedDescriptor) { if lives() { real.close(file) } }
        func rename(_ source: String, to destination: String) throws(Errno) { try alive(); try real.rename(source, to: destination) }
        func remove(_ path: String) { if lives() { real.remove(path) } }
        func openDirectory(_ path: String) throws(Errno) -> OwnedDescriptor { try alive(); return try real.openDirectory(path) }
        func regularFileContents(of path: String, atMost limit: Int) throws(Errno) -> RegularFileContents {
            try alive(); return try real.regularFileContents(of: path, atMost: limit)
        }
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

    /// The real file calls, but reading the state file fails with `errno` (EACCES: the tests run as
    /// root, whom a mode of 000 does not stop) and, when `renameFails`, so does moving it.
    struct Unreadable: FileOperations {
        let real = LocalFiles()
        var errno = Errno.permissionDenied
        var renameFails = false
        func makeDirectory(_ path: String, permissions: FilePermissions) throws(Errno) { try real.makeDirectory(path, permissions: permissions) }
        func makeTemporaryFile(template: String) throws(Errno) -> TemporaryFile { try real.makeTemporaryFile(template: template) }
        func write(_ bytes: [UInt8], to file: borrowing OwnedDescriptor) throws(Errno) { try real.write(bytes, to: file) }
        func synchronize(_ file: borrowing OwnedDescriptor) throws(Errno) { try real.synchronize(file) }
        func close(_ file: consuming OwnedDescriptor) { real.close(file) }
        func rename(_ source: String, to destination: String) throws(Errno) {
            if renameFails && !source.contains(".tmp-") { throw .permissionDenied }
            try real.rename(source, to: destination)
        }
        func remove(_ path: String) { real.remove(path) }
        func openDirectory(_ path: String) throws(Errno) -> OwnedDescriptor { try real.openDirectory(path) }
        func regularFileContents(of path: String, atMost limit: Int) throws(Errno) -> RegularFileContents { throw errno }
        func entries(of directory: String) -> [String] { real.entries(of: directory) }
    }

    /// A directory with `name` in it, made by `make` (a path given).
    func directory(with name: String, _ make: (String) throws -> Void) throws -> String {
        let directory = directory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try make(directory + "/" + name)
        return directory
    }

    /// Issue 40, defect 6: a state file that cannot be read (EACCES) was overwritten at the first save,
    /// losing the week and the total. It is set aside as a corrupt one is, the error naming the errno.
    @Test func anUnreadableStateFileIsSetAsideNotOverwritten() throws {
        let directory = try directory(with: "history.json") { try Data("the week".utf8).write(to: URL(fileURLWithPath: $0)) }
        let store = StateStore(directory: directory, name: "history.json", files: Unreadable())
        #expect {
            try store.load(SensorFusion.Calibration.self)
        } throws: { error in
            "\(error)".contains("history.json cannot be read: EACCES") && "\(error)".contains("kept as \(store.path).corrupt")
        }
        try store.save(calibration)
        #expect(try String(contentsOfFile: store.path + ".corrupt", encoding: .utf8) == "the week")
    }

    /// Nor read nor moved aside: the store says so, and `SavedState` saves nothing over it.
    @Test func aStateFileThatCanBeNeitherReadNorSetAsideIsNotSavedOver() throws {
        let directory = try directory(with: "history.json") { try Data("the week".utf8).write(to: URL(fileURLWithPath: $0)) }
        let store = StateStore(directory: directory, name: "history.json", files: Unreadable(renameFails: true))
        #expect(throws: StateStore.Unusable.self) { try store.load(SensorFusion.Calibration.self) }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let log = LogLines()
        let offLoop = OffLoopWork(eventLoop: loop)
        let wrote = try loop.submit {
            let state = SavedState<SensorFusion.Calibration>("history", store: store, offLoop: offLoop, logger: Logger(label: "test") { _ in log })
            return [state.save(calibration), { state.saveNow(calibration); return false }()]
        }.wait()
        offLoop.waitUntilDone()
        #expect(wrote == [false, false])
        #expect(try String(contentsOfFile: store.path, encoding: .utf8) == "the week")
        #expect(log.lines.contains { $0.contains("not saving it") && $0.contains("EACCES") && $0.contains(store.path) }, "\(log.lines)")
    }

    /// Issue 40, defect 8: a FIFO as the state file blocked the start, with nothing logged. It is
    /// set aside at once (the load runs on a thread of its own: if it blocks, a shell opens the
    /// FIFO's other end to free it, and the test fails; a shell, because umockdev's preload holds
    /// its path lock through the blocked open, and any path call of this process would wait on it).
    @Test func aFIFOIsSetAsideWithoutBlocking() throws {
        let directory = try directory(with: "calibration.json") { #expect(mkfifo($0, 0o600) == 0) }
        let store = StateStore(directory: directory)
        let outcome = Mutex<String?>(nil)
        let thread = Thread {
            let text: String
            do { text = "loaded \(String(describing: try store.load(SensorFusion.Calibration.self)))" } catch { text = "\(error)" }
            outcome.withLock { $0 = text }
        }
        thread.start()
        let returned = (try? waitUntil(seconds: 5) { outcome.withLock { $0 } != nil }) != nil
        if !returned {
            // Nothing here may call a path function (Foundation's URL does) before the shell has run.
            var pid: pid_t = 0
            let words: [String] = ["/bin/sh", "-c", #": > "$0""#, store.path]
            let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
            defer { argv.forEach { free($0) } }
            #expect(posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ) == 0)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            try waitUntil { outcome.withLock { $0 } != nil }
        }
        #expect(returned, "the load blocked on the FIFO")
        let said = outcome.withLock { $0 } ?? ""
        #expect(said.contains("is a FIFO, not a regular file; kept as \(store.path).corrupt"), "\(said)")
        var status = stat()
        #expect(lstat(store.path + ".corrupt", &status) == 0 && status.st_mode & S_IFMT == S_IFIFO, "the FIFO itself is kept")
    }

    /// A symbolic link to /dev/zero was read until memory ran out (6 GB, and no socket): it is set
    /// aside unread, the link itself moved.
    @Test func aLinkToDevZeroIsSetAsideUnread() throws {
        let directory = try directory(with: "calibration.json") { #expect(symlink("/dev/zero", $0) == 0) }
        let store = StateStore(directory: directory)
        #expect {
            try store.load(SensorFusion.Calibration.self)
        } throws: { "\($0)".contains("is a character device, not a regular file") }
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: store.path + ".corrupt") == "/dev/zero")
    }

    /// A sparse file of 1 GB (ftruncate) was read whole, 2 GB at the peak: it is set aside unread.
    @Test func aGigabyteFileIsSetAsideUnread() throws {
        let directory = try directory(with: "history.json") { path in
            let fd = open(path, O_CREAT | O_WRONLY, 0o600)
            defer { Foundation.close(fd) }
            #expect(ftruncate(fd, 1 << 30) == 0)
        }
        let store = StateStore(directory: directory, name: "history.json")
        #expect {
            try store.load(SensorFusion.Calibration.self)
        } throws: { "\($0)".contains("is 1073741824 bytes, more than the \(StateStore.maximumFileSize) a state file may be") }
        #expect(FileManager.default.fileExists(atPath: store.path + ".corrupt"))
    }

    /// The size cap holds the largest real state: a week with steps in every minute and 4,096
    /// activities, as written (and again with every number at its widest).
    @Test func theLargestHistoryFitsTheSizeCap() throws {
        let now: Int64 = 1_795_564_800 * 1_000_000_000
        var history = GaitHistory(now: now)
        for minute in 0..<GaitHistory.minutesKept { history.add(steps: Int(Int32.max), at: now - minute * 60_000_000_000) }
        for i in 0..<GaitHistory.activitiesKept {
            history.add(HistoryReply.Activity(activity: .automotive, confidence: .medium, start: 1_795_564_800.1234567 - Double(i) * 97.3))
        }
        let store = StateStore(directory: directory(), name: "history.json")
        try store.save(history.saved)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: store.path)[.size] as? Int)
        #expect(try store.load(GaitHistory.Saved.self) == history.saved)
        var widest = history.saved
        widest.minutes = widest.minutes.enumerated().map { [Int64.max - Int64($0.offset), Int64(Int32.max)] }
        let widestActivity = HistoryReply.Activity(activity: .automotive, confidence: .medium, start: -1.2345678901234567e-300)
        widest.activities = widest.activities.map { _ in widestActivity }
        try store.save(widest)
        let widestSize = try #require(try FileManager.default.attributesOfItem(atPath: store.path)[.size] as? Int)
        print("largest history: \(size) bytes; with the widest numbers \(widestSize); cap \(StateStore.maximumFileSize)")
        #expect(size < StateStore.maximumFileSize && widestSize < StateStore.maximumFileSize)
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

/// What was logged, a line a message (level, message, metadata), for a test to read.
final class LogLines: LogHandler, @unchecked Sendable {
    // @unchecked: `said` is behind its lock; the level is set once.
    private let said = Mutex<[String]>([])
    var logLevel = Logger.Level.trace
    var metadata: Logger.Metadata { get { [:] } set {} }  // none of its own: what is logged carries it
    subscript(metadataKey key: String) -> Logger.Metadata.Value? { get { nil } set {} }
    func log(event: LogEvent) { said.withLock { $0.append("\(event.level) \(event.message) \(event.metadata ?? [:])") } }
    var lines: [String] { said.withLock { $0 } }
}
