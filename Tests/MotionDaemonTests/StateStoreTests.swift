import Foundation
import MotionCore
import MotionFusion
import Synchronization
import Testing

@testable import MotionDaemon

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
