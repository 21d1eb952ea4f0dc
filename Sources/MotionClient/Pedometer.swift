import Foundation
import MotionCore
import Synchronization

/// CoreMotion's `CMPedometerData`: the steps of a span, their distance, and the gait now.
public struct PedometerData: Sendable, Hashable {
    /// The span's start.
    public var startDate: Date
    /// The span's end: the last step counted (live updates), or the end asked for (queries).
    public var endDate: Date
    /// Steps in the span.
    public var numberOfSteps: Int
    /// Metres walked in the span (the steps times motiond's step length).
    public var distance: Double
    /// Steps per second now; `nil` for queries and before the third step of a walk.
    public var currentCadence: Double?
    /// Seconds per metre now; `nil` as `currentCadence`.
    public var currentPace: Double?
    /// Floors (about 3 m) climbed on foot in the span; `nil` without a pressure sensor, and for queries.
    public var floorsAscended: Int?
    /// Floors gone down on foot in the span, as `floorsAscended`.
    public var floorsDescended: Int?
}

/// CoreMotion's `CMPedometer`, on motiond's `pedometer` stream and its `HISTORY` (docs/protocol.md):
/// live counts since a date, and counts over a past range of the last 7 days. Handlers run on the
/// subscription's thread (live updates) or the caller's (queries). Floors need a pressure sensor, and
/// are counted live only (not kept in the history).
///
///     let pedometer = Pedometer()
///     pedometer.startUpdates(from: Date()) { data, error in
///         if let data { print(data.numberOfSteps) }
///     }
public final class Pedometer: Sendable {
    /// The daemon this pedometer talks to.
    public let client: MotionClient
    private let live = UpdateSlot()

    /// A pedometer on the daemon `client` reaches.
    public init(client: MotionClient = MotionClient()) { self.client = client }

    /// Whether the daemon can count steps (it has an accelerometer).
    public var isStepCountingAvailable: Bool { (try? client.devices())?.contains { $0.kinds.contains(.accelerometer) } ?? false }
    /// Whether distances are given (with the steps).
    public var isDistanceAvailable: Bool { isStepCountingAvailable }
    /// Whether the cadence is given (with the steps).
    public var isCadenceAvailable: Bool { isStepCountingAvailable }
    /// Whether the pace is given (with the steps).
    public var isPaceAvailable: Bool { isStepCountingAvailable }
    /// Whether floors are counted (the daemon has a pressure sensor).
    public var isFloorCountingAvailable: Bool { (try? client.devices())?.contains { $0.kinds.contains(.pressure) } ?? false }

    /// The steps between `start` and `end` (of the last 7 days, to the minute: the minutes that
    /// begin in the range), given to `handler` at once, on the caller's thread.
    public func queryPedometerData(from start: Date, to end: Date, withHandler handler: (PedometerData?, (any Error)?) -> Void) {
        do {
            let reply = try client.history(of: .pedometer, from: start.timeIntervalSince1970, to: end.timeIntervalSince1970)
            handler(PedometerData(
                startDate: Date(timeIntervalSince1970: reply.from), endDate: Date(timeIntervalSince1970: reply.to),
                numberOfSteps: reply.steps ?? 0, distance: reply.distance ?? 0), nil)
        } catch {
            handler(nil, error)
        }
    }

    /// Starts live updates of the steps since `start` (a past date counts the history from it, to the
    /// minute, then each step as it is counted), one at each new count. A past date asks the daemon
    /// for its history first, on the caller's thread (one round trip, at most the client's timeout).
    public func startUpdates(from start: Date, withHandler handler: @escaping @Sendable (PedometerData?, (any Error)?) -> Void) {
        let past: Int
        do {
            past = start < Date() ? try client.history(of: .pedometer, from: start.timeIntervalSince1970).steps ?? 0 : 0
        } catch {
            return handler(nil, error)
        }
        // The stream's count is since the daemon's first start: the span's steps are what it adds to
        // its first value, on top of the history's.
        let baseline = Mutex<(steps: Int, ascended: Int?, descended: Int?)?>(nil)
        live.replace {
            client.watch([.pedometer]) { result in
                switch result {
                case .success(.pedometer(let m)):
                    let first = baseline.withLock { first in
                        if first == nil { first = (m.steps, m.floorsAscended, m.floorsDescended) }
                        return first!
                    }
                    let steps = past + m.steps - first.steps
                    // Floors since these updates began (the history keeps none).
                    func since(_ now: Int?, _ then: Int?) -> Int? { now.map { $0 - (then ?? 0) } }
                    handler(PedometerData(
                        startDate: start, endDate: m.timestamp > 0 ? Date(monotonicNanoseconds: m.timestamp) : Date(),
                        numberOfSteps: steps, distance: m.steps > 0 ? m.distance / Double(m.steps) * Double(steps) : 0,
                        currentCadence: m.cadence, currentPace: m.pace, floorsAscended: since(m.floorsAscended, first.ascended),
                        floorsDescended: since(m.floorsDescended, first.descended)), nil)
                case .success: break
                case .failure(let error): handler(nil, error)
                }
            }
        }
    }

    /// Stops the live updates.
    public func stopUpdates() { live.stop() }
}
