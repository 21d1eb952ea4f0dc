import Foundation
import MotionCore

/// CoreMotion's `CMMotionActivity`: what the person carrying the device does, how sure, since when.
public struct MotionActivity: Sendable, Hashable {
    /// When the activity began.
    public var startDate: Date
    /// The activity (motiond reports stationary, walking, running or unknown).
    public var kind: MotionActivityKind
    /// How sure.
    public var confidence: MotionActivityConfidence

    /// Whether the device lies or is held still.
    public var stationary: Bool { kind == .stationary }
    /// Whether the person walks.
    public var walking: Bool { kind == .walking }
    /// Whether the person runs.
    public var running: Bool { kind == .running }
    /// Whether the person rides in a vehicle (never reported by this version).
    public var automotive: Bool { kind == .automotive }
    /// Whether the person cycles (never reported by this version).
    public var cycling: Bool { kind == .cycling }
    /// Whether the activity is not known.
    public var unknown: Bool { kind == .unknown }
}

/// CoreMotion's `CMMotionActivityManager`, on motiond's `activity` stream and its `HISTORY`
/// (docs/protocol.md): live changes, and the activities of a past range of the last 7 days.
public final class MotionActivityManager: Sendable {
    /// The daemon this manager talks to.
    public let client: MotionClient
    private let live = UpdateSlot()

    /// A manager on the daemon `client` reaches.
    public init(client: MotionClient = MotionClient()) { self.client = client }

    /// Whether the daemon can tell the activity (it has an accelerometer).
    public var isActivityAvailable: Bool { (try? client.devices())?.contains { $0.kinds.contains(.accelerometer) } ?? false }

    /// Starts live updates: the activity now, then each change and each rise in confidence; the
    /// handler runs on `queue` if given, else on the subscription's thread.
    public func startActivityUpdates(to queue: OperationQueue? = nil, withHandler handler: @escaping @Sendable (MotionActivity?) -> Void) {
        live.replace {
            client.watch([.activity]) { result in
                guard case .success(.activity(let m)) = result else { return }
                let activity = MotionActivity(startDate: Date(monotonicNanoseconds: m.start), kind: m.activity, confidence: m.confidence)
                UpdateSlot.run(on: queue) { handler(activity) }
            }
        }
    }

    /// Stops the live updates.
    public func stopActivityUpdates() { live.stop() }

    /// The activities between `start` and `end` (the one under way at `start` first), oldest first,
    /// given to `handler` at once, on the caller's thread.
    public func queryActivityStarting(from start: Date, to end: Date, withHandler handler: ([MotionActivity]?, (any Error)?) -> Void) {
        do {
            let reply = try client.history(of: .activity, from: start.timeIntervalSince1970, to: end.timeIntervalSince1970)
            handler((reply.activities ?? []).map {
                MotionActivity(startDate: Date(timeIntervalSince1970: $0.start), kind: $0.activity, confidence: $0.confidence)
            }, nil)
        } catch {
            handler(nil, error)
        }
    }
}
