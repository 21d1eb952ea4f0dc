import Logging
import MotionFusion
import NIOCore
import NIOPosix

/// What the fusion learnt about the sensors (gyroscope bias and scale, magnetometer offset), kept
/// across fusions and restarts: loaded at start, saved now and then off the loop, and at shutdown.
final class CalibrationKeeper: @unchecked Sendable {
    // @unchecked: confined to the hub's event loop, as the closures it schedules there are.
    private let store: StateStore?
    private let offLoop: OffLoopWork
    private let logger: Logger
    /// The calibration last saved or handed over by a fusion that ended.
    private(set) var calibration: SensorFusion.Calibration?
    private var saving = false

    init(store: StateStore?, offLoop: OffLoopWork, logger: Logger) {
        self.store = store
        self.offLoop = offLoop
        self.logger = logger
        guard let store else { return }
        do {
            calibration = try store.load(SensorFusion.Calibration.self)
            if calibration != nil { logger.info("calibration restored", metadata: ["file": "\(store.path)"]) }
        } catch {
            logger.error("saved state unreadable, starting afresh", metadata: ["file": "\(store.path)", "error": "\(error)"])
        }
    }

    /// Keeps what a fusion learnt (it is about to end, or to be replaced).
    func keep(_ learnt: SensorFusion.Calibration) {
        calibration = learnt
    }

    /// Keeps `learnt` and saves it in the background: file writes and fsync stay off the event loop,
    /// on NIO's thread pool (no libdispatch worker pool, with its monitor thread, for one write a minute).
    /// A save still under way at shutdown is waited for (`Hub.waitForOffLoopWork`).
    func save(_ learnt: SensorFusion.Calibration) {
        calibration = learnt
        guard let store, !saving else { return }
        saving = true
        offLoop.run({ try store.save(learnt) }, then: { [self] result in
            saving = false
            if case .failure(let error) = result { logger.error("cannot save state", metadata: ["error": "\(error)"]) }
        })
    }

    /// Saves `learnt` (or what was kept) now, waiting for the disk (at shutdown).
    func saveNow(_ learnt: SensorFusion.Calibration?) {
        guard let store, let calibration = learnt ?? calibration else { return }
        do {
            try store.save(calibration)
        } catch {
            logger.error("cannot save state", metadata: ["error": "\(error)"])
        }
    }
}
