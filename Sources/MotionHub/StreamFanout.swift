import MotionCore
import MotionWire
import NIOCore

/// Who watches which stream, at which interval and in which frame, and the sending of each stream's
/// messages to them: a periodic message is encoded once per frame and reaches only the clients due
/// one; an event reaches every watcher.
final class StreamFanout {
    typealias ID = ClientOutbox.ID

    struct Watch {
        var interval: Double
        var frame: AttitudeReferenceFrame
        /// Seconds its samples may wait, so that the sensor delivers them in batches.
        var latency = 0.0
        var decimator: StreamDecimator
    }

    /// One client's watch of one stream. A class: each sample updates its decimator in place.
    private final class Subscription {
        let id: ID
        let outbox: ClientOutbox
        var watch: Watch
        init(id: ID, outbox: ClientOutbox, watch: Watch) { (self.id, self.outbox, self.watch) = (id, outbox, watch) }
    }

    private let clients: ClientTable
    /// Each stream's subscriptions, by `StreamKind.allCases` order: the per-sample loop visits only
    /// the clients of that stream, and hashes nothing.
    private var subscriptions: [[Subscription]] = Array(repeating: [], count: StreamKind.allCases.count)
    /// The streams each client watches, for requests (not the per-sample path).
    private var streamsOf: [ID: Set<StreamKind>] = [:]
    /// Called when a one-shot stream's message ended its watches (the plan disarms what armed them).
    var triggersFired: () -> Void = {}

    /// The streams a message of which ends the watch it reaches, as Android's one-shot sensors do:
    /// a `WATCH` arms it again.
    static let oneShot: Set<StreamKind> = [.significantMotion]

    init(clients: ClientTable) {
        self.clients = clients
    }

    /// The streams a client watches, by name.
    func watches(of id: ID) -> [StreamKind: Watch] {
        var watches: [StreamKind: Watch] = [:]
        for stream in streamsOf[id] ?? [] {
            if let subscription = subscriptions[stream.index].first(where: { $0.id == id }) { watches[stream] = subscription.watch }
        }
        return watches
    }

    /// Starts (or changes) a client's watch of `stream`; `nil` ends it.
    func setWatch(_ watch: Watch?, of stream: StreamKind, for id: ID) {
        if let watch {
            if let existing = subscriptions[stream.index].first(where: { $0.id == id }) {
                existing.watch = watch
                return
            }
            guard let outbox = clients[id] else { return }
            subscriptions[stream.index].append(Subscription(id: id, outbox: outbox, watch: watch))
            streamsOf[id, default: []].insert(stream)
        } else if streamsOf[id]?.remove(stream) != nil {
            subscriptions[stream.index].removeAll { $0.id == id }
            if streamsOf[id]!.isEmpty { streamsOf[id] = nil }
        }
    }

    /// Forgets a client's watches (it disconnected). Returns whether it had any.
    func removeAll(of id: ID) -> Bool {
        guard let streams = streamsOf.removeValue(forKey: id) else { return false }
        for stream in streams { subscriptions[stream.index].removeAll { $0.id == id } }
        return true
    }

    /// Whether a client watches motion in `frame`.
    func watchesMotion(in frame: AttitudeReferenceFrame) -> Bool {
        subscriptions[StreamKind.motion.index].contains { $0.watch.frame == frame }
    }

    /// What every watch asks of the sensors.
    var demands: [CapturePlan.Demand] {
        zip(StreamKind.allCases, subscriptions).flatMap { stream, list in
            list.map { CapturePlan.Demand(stream: stream, interval: $0.watch.interval, latency: $0.watch.latency) }
        }
    }

    /// Sends a periodic stream's message to every client due one: as a value to an in-process front
    /// end, as its line to the others, written at most once per frame and shared.
    func deliver(_ stream: StreamKind, timestamp: Int64, period: Int64, message: (AttitudeReferenceFrame) -> AnyServerMessage) {
        // One line per frame, by `frameIndex`, without a dictionary's allocation.
        var lines = InlineArray<4, ByteBuffer?>(repeating: nil)
        func line(_ frame: AttitudeReferenceFrame) -> ByteBuffer? {
            let index = Self.frameIndex(frame)
            if lines[index] == nil { lines[index] = clients.encode(message(frame)) }
            return lines[index]
        }
        for subscription in subscriptions[stream.index] {
            guard subscription.watch.decimator.accepts(timestamp, sensorPeriod: period) else { continue }
            let frame = stream == .motion ? subscription.watch.frame : .xArbitraryZVertical
            clients.deliver(message(frame), line: { line(frame) }, to: subscription.outbox, kind: .stream(stream))
        }
    }

    /// Sends an event (it is never dropped) to every client watching its stream, its line encoded at
    /// most once.
    func deliverEvent(_ stream: StreamKind, _ message: AnyServerMessage) {
        guard !subscriptions[stream.index].isEmpty else { return }
        // Encoded once, a failure included (it is logged once, not per watcher).
        var encoded: ByteBuffer??
        func line() -> ByteBuffer? {
            if encoded == nil { encoded = .some(clients.encode(message)) }
            return encoded!
        }
        for subscription in subscriptions[stream.index] { clients.deliver(message, line: line, to: subscription.outbox, kind: .kept) }
        // One message per arming, and no ENDED: the message itself ends the watch.
        guard Self.oneShot.contains(stream) else { return }
        for id in subscriptions[stream.index].map(\.id) { setWatch(nil, of: stream, for: id) }
        triggersFired()
    }

    /// Ends, with `ENDED` and its reason, every watch of a stream that `device`'s capture fed in
    /// `plan` (the one it ran in) with a sensor the stream needs: the others go on.
    func endStreams(fedBy device: DeviceNumber, in plan: CapturePlan, reason: String) {
        for stream in StreamKind.allCases where plan.feeds(stream, from: device) {
            for id in subscriptions[stream.index].map(\.id) {
                setWatch(nil, of: stream, for: id)
                clients.send(Ended(stream: stream, reason: reason), to: id)
            }
        }
    }

    private static func frameIndex(_ frame: AttitudeReferenceFrame) -> Int {
        switch frame {
        case .xArbitraryZVertical: 0
        case .xArbitraryCorrectedZVertical: 1
        case .xMagneticNorthZVertical: 2
        case .xTrueNorthZVertical: 3
        }
    }
}
