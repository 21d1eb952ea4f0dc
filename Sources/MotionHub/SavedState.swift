import Logging
import NIOCore
import NIOPosix

/// Something the daemon keeps across restarts in a file of its state directory (the fusion's
/// calibration, the step history): loaded at start, saved now and then off the loop, and at shutdown.
final class SavedState<State: Codable & Sendable & Equatable>: @unchecked Sendable {
    // @unchecked: confined to the hub's event loop, as the closures it schedules there are.
    /// Where it is kept; `nil` without a state directory, or once a file there could be neither read
    /// nor set aside (`StateStore.Unusable`): nothing is saved over it.
    private let store: StateStore?
    private let offLoop: OffLoopWork
    private let logger: Logger
    /// What it is, for the log ("calibration").
    private let what: String
    /// The value last saved, loaded or kept.
    private(set) var value: State?
    /// Whether `value` is on disk: false from `save` until a write of it succeeds (a write that
    /// failed, a full disk say, or one skipped because another was under way, leaves it false, so
    /// that the owner asks again rather than lose it).
    private(set) var isSaved = true
    private var saving = false
    /// Whether it is kept across restarts: it has a store to be saved to.
    var isKept: Bool { store != nil }
    /// Counts the values given to `save`, to know whether the one written is still the latest.
    private var generation = 0

    /// Loads `what` from `store` (nothing without a store: a daemon with no state directory).
    init(_ what: String, store: StateStore?, offLoop: OffLoopWork, logger: Logger) {
        self.what = what
        self.offLoop = offLoop
        self.logger = logger
        guard let store else {
            self.store = nil
            return
        }
        do {
            value = try store.load(State.self)
            if value != nil { logger.info("\(what) restored", metadata: ["file": "\(store.path)"]) }
            self.store = store
        } catch let error as StateStore.Unusable {
            // What may be the only copy stays as it is: kept in memory only until a restart after
            // someone fixed the file or its directory.
            logger.error("saved \(what) unusable, starting afresh and not saving it", metadata: ["file": "\(store.path)", "error": "\(error)"])
            self.store = nil
        } catch {
            // `StateStore.Corrupt`: the file is aside, out of a save's way.
            logger.error("saved \(what) set aside, starting afresh", metadata: ["file": "\(store.path)", "error": "\(error)"])
            self.store = store
        }
    }

    /// Keeps `value` without saving it (what a fusion about to end learnt).
    func keep(_ value: State) {
        self.value = value
    }

    /// Keeps `value` and saves it in the background: file writes and fsync stay off the event loop,
    /// on a thread made for the save (`OffLoopWork`: no pool kept at rest for one write a minute). A
    /// save still under way at shutdown is waited for (`Hub.offLoop`). A value already on disk is not
    /// written again: a device at rest does not rewrite its calibration every minute, and
    /// the encoder's code, paged out once the sensors settled, stays out (the periodic save had
    /// brought 3 MB of it back into a screen-rotation daemon's memory). Returns whether there was
    /// something new to write.
    @discardableResult
    func save(_ value: State) -> Bool {
        if isSaved, value == self.value { return false }
        self.value = value
        generation += 1
        isSaved = false
        // Nothing is written without a store: no page-out scheduled each minute for nothing.
        guard let store else { return false }
        guard !saving else { return true }
        saving = true
        let written = generation
        offLoop.run({ try store.save(value) }, then: { [self] result in
            saving = false
            switch result {
            case .success: if written == generation { isSaved = true }
            case .failure(let error): logger.error("cannot save \(what)", metadata: ["error": "\(error)"])
            }
        })
        return true
    }

    /// Saves `value` (or what was kept) now, waiting for the disk (at shutdown).
    func saveNow(_ value: State?) {
        guard let store, let state = value ?? self.value else { return }
        do {
            try store.save(state)
            self.value = state
            isSaved = true
        } catch {
            logger.error("cannot save \(what)", metadata: ["error": "\(error)"])
        }
    }
}
