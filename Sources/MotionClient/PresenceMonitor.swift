import Foundation
import MotionCore
import Synchronization

/// Whether a person is at the machine, as motiond's `presence` stream tells it (protocol 1.11,
/// `PRESENCE`). CoreMotion has no such type; this one is shaped as its data types are.
public struct PresenceData: Sendable, Hashable {
    /// When the reading that made the change was taken, seconds of CLOCK_MONOTONIC (since boot, as
    /// CoreMotion's `timestamp`).
    public var timestamp: Double
    /// Whether a person is there.
    public var isPresent: Bool
    /// Whether they look at the screen (attention ≥ 50 %); `nil` where the sensor has no attention
    /// channel (a proximity sensor never has one).
    public var isAttentive: Bool?
    /// How far they are, metres, as the sensor gives it; `nil` where it gives none.
    public var distance: Double?
    /// Where it is told from: an HID human-presence sensor, or a proximity sensor (present while near).
    public var source: PresenceMessage.Source
    /// A value as a program's own tests may make one; `timestamp` in seconds, `distance` in metres.
    public init(timestamp: Double, isPresent: Bool, isAttentive: Bool?, distance: Double?, source: PresenceMessage.Source) {
        (self.timestamp, self.isPresent, self.isAttentive, self.distance, self.source) = (timestamp, isPresent, isAttentive, distance, source)
    }
}

/// A person's presence at the machine on motiond's `presence` stream (docs/client.md), shaped as
/// CoreMotion's managers are: the state when updates start, then each change (a change at once; the
/// next held until the new state has lasted 1 s, so a flapping sensor gives at most one a second).
/// The handler runs on `queue` if given, else on the subscription's thread. The policy (locking,
/// dimming) is the program's.
///
///     let monitor = PresenceMonitor()
///     monitor.startPresenceUpdates(to: .main) { data, error in
///         if let data, !data.isPresent { print("away") }
///     }
public final class PresenceMonitor: Sendable {
    /// The daemon this monitor talks to.
    public let client: MotionClient
    private let live = UpdateSlot()

    /// A monitor on the daemon `client` reaches.
    public init(client: MotionClient = MotionClient()) { self.client = client }

    /// Whether the daemon can tell presence: it has a human-presence sensor, or a proximity sensor.
    public var isPresenceAvailable: Bool {
        (try? client.devices())?.contains { $0.kinds.contains(.humanPresence) || $0.kinds.contains(.proximity) } ?? false
    }

    /// Starts updates: the presence now, then each change; in place of the updates running. An error
    /// (the machine has no presence sensor, it went away) ends them, told once.
    public func startPresenceUpdates(
        to queue: OperationQueue? = nil, withHandler handler: @escaping @Sendable (PresenceData?, (any Error)?) -> Void
    ) {
        live.replace {
            client.watch([.presence]) { result in
                switch result {
                case .success(.presence(let m)):
                    let data = PresenceData(
                        timestamp: Double(m.timestamp) * 1e-9, isPresent: m.present, isAttentive: m.attention, distance: m.distance, source: m.source)
                    UpdateSlot.run(on: queue) { handler(data, nil) }
                case .success: break
                case .failure(let error): UpdateSlot.run(on: queue) { handler(nil, error) }
                }
            }
        }
    }

    /// Stops the updates.
    public func stopPresenceUpdates() { live.stop() }
}

/// One significant motion (protocol 1.11, `SIGNIFICANT_MOTION`): a motion that likely changes where
/// the user is, Android's `TYPE_SIGNIFICANT_MOTION` trigger event.
public struct SignificantMotionEvent: Sendable, Hashable {
    /// When it was told, seconds of CLOCK_MONOTONIC: the chip's event's instant, or the sample's that
    /// confirmed the walk.
    public var timestamp: Double
    /// What told it: the chip's own significant-motion sensor, or the step detector on the accelerometer.
    public var source: SignificantMotionMessage.Source
    /// A value as a program's own tests may make one; `timestamp` in seconds of CLOCK_MONOTONIC.
    public init(timestamp: Double, source: SignificantMotionMessage.Source) {
        (self.timestamp, self.source) = (timestamp, source)
    }
}

/// Android's one-shot significant-motion trigger (`SensorManager.requestTriggerSensor`) on motiond's
/// `significant_motion` stream (docs/client.md): `request` arms it, the first significant motion after
/// that is handed over once and the trigger disarms itself; `request` again arms it again. While
/// armed the chip's sensor (or the accelerometer's step detector) runs; disarmed, nothing does.
///
///     let trigger = SignificantMotionTrigger()
///     trigger.request { event, error in
///         if event != nil { print("on the move") }
///     }
public final class SignificantMotionTrigger: Sendable {
    /// The daemon this trigger talks to.
    public let client: MotionClient
    private let armed = UpdateSlot()

    /// A trigger on the daemon `client` reaches.
    public init(client: MotionClient = MotionClient()) { self.client = client }

    /// Whether the daemon can tell a significant motion: the chip's sensor, or an accelerometer.
    public var isAvailable: Bool {
        (try? client.devices())?.contains { $0.kinds.contains(.significantMotion) || $0.kinds.contains(.accelerometer) } ?? false
    }

    /// Arms the trigger, in place of an arming under way: `handler` gets the first significant motion
    /// once (or an error, once: the machine cannot tell one), on `queue` if given, else on the
    /// subscription's thread; then the trigger is disarmed.
    public func request(
        to queue: OperationQueue? = nil, withHandler handler: @escaping @Sendable (SignificantMotionEvent?, (any Error)?) -> Void
    ) {
        // Set once the subscription exists: the event (which may come at once) cancels it.
        let subscription = Mutex<Subscription?>(nil)
        let fired = Atomic<Bool>(false)
        armed.replace {
            let started = client.watch([.significantMotion]) { result in
                // One event per arming, as Android's: a daemon restart re-arms the watch, and what it
                // sends after the first is not handed on.
                guard !fired.exchange(true, ordering: .acquiringAndReleasing) else { return }
                switch result {
                case .success(.significantMotion(let m)):
                    let event = SignificantMotionEvent(timestamp: Double(m.timestamp) * 1e-9, source: m.source)
                    UpdateSlot.run(on: queue) { handler(event, nil) }
                case .success:
                    fired.store(false, ordering: .releasing)  // not the trigger's message: still armed
                    return
                case .failure(let error): UpdateSlot.run(on: queue) { handler(nil, error) }
                }
                // The daemon ended this watch with its message; the connection goes too.
                subscription.withLock { $0 }?.cancel()
            }
            subscription.withLock { $0 = started }
            // An event before the line above: cancelled here instead.
            if fired.load(ordering: .acquiring) { started.cancel() }
            return started
        }
    }

    /// Disarms the trigger: no event is handed over after this returns, save one being handed now.
    public func cancel() { armed.stop() }
}
