import Foundation
import Logging
import MotionFusion
import NIOCore
import NIOEmbedded
import HubTestKit
import MotionCore
import MotionDevices
import MotionWire
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

    /// A presence sensor, a proximity or light sensor or a chip's trigger alone sets no periodic save:
    /// nothing they feed learns, and a lock policy watches presence all day (a save a minute was a
    /// wake-up a minute). The step counter or an accelerometer not resting does (the control).
    @Test func sensorsThatLearnNothingSetNoPeriodicSave() throws {
        let loop = EmbeddedEventLoop()
        let saver = StateSaver(
            store: StateStore(directory: NSTemporaryDirectory() + "motiond-saver-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"),
            offLoop: OffLoopWork(eventLoop: loop, runner: .inline), eventLoop: loop, logger: Logger(label: "test"))
        saver.savesState(every: .seconds(60))
        func plan(_ stream: StreamKind, on devices: [DeviceDescriptor]) -> CapturePlan {
            CapturePlan(demands: [CapturePlan.Demand(stream: stream, interval: 1)], devices: devices)
        }
        let alone: [(StreamKind, [DeviceDescriptor])] = [
            (.presence, [Machines.humanPresence]), (.proximity, [Machines.proximityOnly]), (.light, Machines.ambientLight),
            (.significantMotion, Machines.chromebook),
        ]
        for (stream, devices) in alone {
            let plan = plan(stream, on: devices)
            #expect(!plan.captures.isEmpty, "\(stream) runs a sensor")
            saver.follow(plan)
            #expect(!saver.savesPeriodically, "\(stream)")
        }
        saver.follow(plan(.pedometer, on: [Machines.bma400]))
        #expect(saver.savesPeriodically, "the step counter learns the history")
        saver.follow(plan(.presence, on: [Machines.humanPresence]))
        #expect(!saver.savesPeriodically)
        saver.follow(plan(.motion, on: [Machines.imu]))
        #expect(saver.savesPeriodically, "the fusion learns its calibration")
        try loop.syncShutdownGracefully()
    }
}
