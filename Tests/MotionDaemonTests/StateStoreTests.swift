import Foundation
import MotionCore
import MotionFusion
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

    @Test func aCorruptFileIsAnErrorNotACrash() throws {
        let store = StateStore(directory: directory())
        try FileManager.default.createDirectory(atPath: store.directory, withIntermediateDirectories: true)
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: store.path))
        #expect(throws: (any Error).self) { try store.load(SensorFusion.Calibration.self) }
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
