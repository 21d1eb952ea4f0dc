import MotionDevices
import Synchronization

/// Hands a capture's events from its reader thread to the hub's event loop, all that arrived
/// since the last hand-over at once: the loop is woken once per read (`readComplete`: an IMU scan
/// gives an accelerometer and a gyroscope sample together), not per sample, and nothing is
/// allocated per sample once warm.
final class EventMailbox: Sendable {
    private struct State {
        var events: [SensorEvent] = []
        /// Whether the consumer has been told and not yet taken the events.
        var scheduled = false
    }

    /// Events held before the oldest sample goes (only if the event loop stalls for seconds).
    static let capacity = 4096

    private let state = Mutex(State())

    init() {
        state.withLock { $0.events.reserveCapacity(64) }
    }

    /// Posts an event (on the reader thread). Returns whether the consumer must be woken to take
    /// what is waiting: at the end of a read, or for an event that is not a sample.
    func post(_ event: SensorEvent) -> Bool {
        state.withLock { state in
            switch event {
            case .readComplete:
                break
            case .sample:
                if state.events.count >= Self.capacity, let oldest = state.events.firstIndex(where: \.isSample) {
                    state.events.remove(at: oldest)
                }
                state.events.append(event)
                return false
            default:
                state.events.append(event)
            }
            guard !state.scheduled, !state.events.isEmpty else { return false }
            state.scheduled = true
            return true
        }
    }

    /// Takes every event posted so far, in order, into `events` (which must be empty): the two
    /// arrays swap, so both keep their storage.
    func take(into events: inout [SensorEvent]) {
        state.withLock { state in
            swap(&events, &state.events)
            state.scheduled = false
        }
    }
}

extension SensorEvent {
    var isSample: Bool {
        if case .sample = self { true } else { false }
    }
}
