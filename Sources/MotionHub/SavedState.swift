import Logging
import NIOCore
import NIOPosix

/// Something the daemon keeps across restarts in a file of its state directory (the fusion's
/// calibration, the step history): loaded at start, saved now and then off the loop, and at shutdown.
final class SavedState<State: Codable & Sendable>: @unchecked Sendable {
    // @unchecked: confined to the hub's event loop, as the closures it schedules there are.
    private let store: StateStore?
    private let offLoop: OffLoopWork
    private let logger: Logger
    /// What it is, for the log ("calibration").
    private let what: String
    /// The value last saved, loaded or kept.
    private(set) var value: State?
    private var saving = false

    /// Loads `what` from `store` (nothing without a store: a daemon with no state directory).
    init(_ what: String, store: StateStore?, offLoop: OffLoopWork, logger: Logger) {
        self.what = what
        self.store = store
        self.offLoop = offLoop
        self.logger = logger
        guard let store else { return }
        do {
            value = try store.load(State.self)
            if value != nil { logger.info("\(what) restored", metadata: ["file": "\(store.path)"]) }
        } catch {
            logger.error("saved \(what) unreadable, starting afresh", metadata: ["file": "\(store.path)", "error": "\(error)"])
        }
    }

    /// Keeps `value` without saving it (what a fusion about to end learnt).
    func keep(_ value: State) {
        self.value = value
    }

    /// Keeps `value` and saves it in the background: file writes and fsync stay off the event loop,
    /// on NIO's thread pool (no libdispatch worker pool, with its monitor thread, for one write a
    /// minute). A save still under way at shutdown is waited for (`Hub.waitForOffLoopWork`).
    func save(_ value: State) {
        self.value = value
        guard let store, !saving else { return }
        saving = true
        offLoop.run({ try store.save(value) }, then: { [self] result in
            saving = false
            if case .failure(let error) = result { logger.error("cannot save \(what)", metadata: ["error": "\(error)"]) }
        })
    }

    /// Saves `value` (or what was kept) now, waiting for the disk (at shutdown).
    func saveNow(_ value: State?) {
        guard let store, let state = value ?? self.value else { return }
        do {
            try store.save(state)
        } catch {
            logger.error("cannot save \(what)", metadata: ["error": "\(error)"])
        }
    }
}
