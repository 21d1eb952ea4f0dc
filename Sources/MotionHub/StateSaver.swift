import Logging
import MotionCore
import MotionFusion
import NIOCore

/// What the hub keeps across restarts, and when it is saved: the fusion's calibration and the step
/// history, every `interval` while sensors that learn run and once when they stop (nothing runs at
/// rest: what is learnt is learnt only while they run), and at shutdown. The writes run off the loop
/// (`SavedState`). Confined to the hub's event loop.
final class StateSaver: @unchecked Sendable {
    // @unchecked: confined to the hub's event loop, as the closures it schedules there are.
    let calibration: SavedState<SensorFusion.Calibration>
    let history: SavedState<GaitHistory.Saved>
    private let eventLoop: any EventLoop
    /// `GaitStage.historyRevision` when the history was last given to be saved.
    private var historySavedRevision = 0
    /// How often the state is saved while sensors run (`savesState(every:)`); nil: only at shutdown.
    private var interval: TimeAmount?
    /// The periodic save, while sensors run: none at rest, so that a daemon nobody uses never wakes.
    private var periodicSave: RepeatedTask?
    /// Called when a save is due (the hub saves what its pipeline learnt).
    var due: () -> Void = {}

    /// Loads the calibration and the history from `store`'s directory (`calibration.json`,
    /// `history.json`; nothing without a store).
    init(store: StateStore?, offLoop: OffLoopWork, eventLoop: any EventLoop, logger: Logger) {
        self.eventLoop = eventLoop
        calibration = SavedState("calibration", store: store, offLoop: offLoop, logger: logger)
        history = SavedState(
            "step history", store: store.map { StateStore(directory: $0.directory, name: "history.json", files: $0.files) }, offLoop: offLoop,
            logger: logger)
    }

    /// Whether the step history is kept across restarts: its steps count whenever the accelerometer
    /// runs, watched or not.
    var keepsHistory: Bool { history.isKept }

    /// Saves every `interval` while sensors that learn run (from the next `follow`).
    func savesState(every interval: TimeAmount) {
        self.interval = interval
    }

    /// Starts or ends the periodic save as sensors that learn (a fusion, the steps) start or stop;
    /// their stopping is a save (`due`).
    func follow(_ plan: CapturePlan) {
        guard let interval else { return }
        // An accelerometer that rests when still serves only event streams, and a proximity, light or
        // presence sensor or a chip's trigger nothing else: nothing they feed learns (no fusion, no
        // steps), so a save would only be a wake-up a minute (of a screen at rest; of a presence a lock
        // policy watches all day).
        let learns = plan.captures.contains { !$0.restsWhenStill && !$0.kinds.isSubset(of: Self.learnsNothing) }
        if learns, periodicSave == nil {
            periodicSave = eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { [unowned self] _ in due() }
        } else if !learns, let running = periodicSave {
            running.cancel()
            periodicSave = nil
            due()
        }
    }

    /// Kinds whose readings teach the saved state nothing.
    static let learnsNothing: Set<SensorKind> = [.proximity, .light, .humanPresence, .significantMotion, .onBody]

    /// Whether a periodic save is set (while sensors that learn run).
    var savesPeriodically: Bool { periodicSave != nil }

    /// Whether the step history changed since it was given to be saved, or its last save did not reach
    /// the disk (failed, or skipped behind another).
    private func historyNeedsSaving(_ gait: GaitStage) -> Bool { gait.historyRevision != historySavedRevision || !history.isSaved }

    /// Saves the calibration of `fusion` (none running: the last one kept, if its save failed), and
    /// `gait`'s history if it changed, in the background. Returns whether something was written.
    func save(_ fusion: SensorFusion?, _ gait: GaitStage) -> Bool {
        var wrote = false
        // With no fusion running, a calibration the disk refused when its fusion ended is tried again:
        // left to the save at shutdown, a crash or a power cut would lose it.
        if let latest = fusion?.calibration ?? (calibration.isSaved ? nil : calibration.value) { wrote = calibration.save(latest) }
        if historyNeedsSaving(gait) {
            historySavedRevision = gait.historyRevision
            wrote = history.save(gait.history.saved) || wrote
        }
        return wrote
    }

    /// Ends the periodic save and saves now, waiting for the disk (at shutdown).
    func saveNow(_ fusion: SensorFusion?, _ gait: GaitStage) {
        periodicSave?.cancel()
        periodicSave = nil
        calibration.saveNow(fusion?.calibration)
        if historyNeedsSaving(gait) { history.saveNow(gait.history.saved) }
    }
}
