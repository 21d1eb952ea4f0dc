import Foundation
import Logging
import MotionFusion
import NIOCore
import NIOEmbedded
import Testing

@testable import MotionHub

@Suite struct StateSaverTests {
    /// A calibration the disk refused when its fusion ended (nobody wanted motion any more) is
    /// written by the next periodic save, though no fusion runs then (the accelerometer runs for the
    /// steps): it is not left for the save at shutdown, which a crash or a power cut never reaches.
    @Test func aCalibrationTheDiskRefusedIsWrittenByTheNextSaveThoughNoFusionRuns() throws {
        let loop = EmbeddedEventLoop()
        let directory = NSTemporaryDirectory() + "motiond-saver-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let disk = SavedStateTests.FullDisk()
        let saver = StateSaver(
            store: StateStore(directory: directory, files: disk), offLoop: OffLoopWork(eventLoop: loop, runner: .inline), eventLoop: loop,
            logger: Logger(label: "test"))
        var fusion = SensorFusion(gyroscopeRate: 100, accelerometerRate: 100)
        fusion.declination = 0.1  // anything but a fresh fusion's
        saver.calibration.save(fusion.calibration)  // as FusionStage does when the fusion ends: the disk is full
        loop.run()
        #expect(!saver.calibration.isSaved)
        disk.full = false
        _ = saver.save(nil, GaitStage(history: GaitHistory(now: 0)))
        loop.run()
        #expect(saver.calibration.isSaved)
        #expect(try StateStore(directory: directory).load(SensorFusion.Calibration.self) == fusion.calibration)
        try loop.syncShutdownGracefully()
    }
}
