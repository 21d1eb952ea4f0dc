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

    /// A client with at least one watch. A class: each sample updates its decimators in place.
    private final class Watcher {
        let outbox: ClientOutbox
        var watches: [StreamKind: Watch] = [:]
        init(outbox: ClientOutbox) { self.outbox = outbox }
    }

    private let clients: ClientTable
    /// Only clients that watch something: the per-sample loop visits no idle connection.
    private var watchers: [ID: Watcher] = [:]
    /// Writes per-sample lines, its buffer reused.
    private var lineWriter = LineWriter()

    init(clients: ClientTable) {
        self.clients = clients
    }

    /// The streams a client watches, by name.
    func watches(of id: ID) -> [StreamKind: Watch] {
        watchers[id]?.watches ?? [:]
    }

    /// Starts (or changes) a client's watch of `stream`; `nil` ends it.
    func setWatch(_ watch: Watch?, of stream: StreamKind, for id: ID) {
        if let watch {
            guard let outbox = clients[id] else { return }
            let watcher = watchers[id] ?? Watcher(outbox: outbox)
            watcher.watches[stream] = watch
            watchers[id] = watcher
        } else if let watcher = watchers[id] {
            watcher.watches[stream] = nil
            if watcher.watches.isEmpty { watchers[id] = nil }
        }
    }

    /// Forgets a client's watches (it disconnected). Returns whether it had any.
    func removeAll(of id: ID) -> Bool {
        watchers.removeValue(forKey: id) != nil
    }

    /// What every watch asks of the sensors.
    var demands: [CapturePlan.Demand] {
        watchers.values.flatMap { watcher in watcher.watches.map { CapturePlan.Demand(stream: $0.key, interval: $0.value.interval, latency: $0.value.latency) } }
    }

    /// Sends a periodic stream's message to every client due one, writing it once per frame.
    func deliver(_ stream: StreamKind, timestamp: Int64, period: Int64, write: (inout LineWriter, AttitudeReferenceFrame) -> Void) {
        var lines = LinesByFrame()
        for watcher in watchers.values {
            guard var watch = watcher.watches[stream] else { continue }
            let due = watch.decimator.accepts(timestamp, sensorPeriod: period)
            watcher.watches[stream] = watch
            guard due else { continue }
            let frame = stream == .motion ? watch.frame : .xArbitraryZVertical
            if lines[frame] == nil {
                write(&lineWriter, frame)
                lines[frame] = ByteBuffer(bytes: lineWriter.bytes)
            }
            clients.enqueue(lines[frame]!, to: watcher.outbox, kind: .stream(stream))
        }
    }

    /// Sends an event (it is never dropped) to every client watching its stream.
    func deliverEvent<M: ServerMessage>(_ stream: StreamKind, _ message: M) {
        guard let bytes = try? Wire.encode(message) else { return }
        let buffer = ByteBuffer(bytes: bytes)
        for watcher in watchers.values where watcher.watches[stream] != nil { clients.enqueue(buffer, to: watcher.outbox, kind: .kept) }
    }

    /// Ends, with `ENDED` and its reason, every watch of a stream that needs one of `kinds`.
    func endStreams(needing kinds: Set<SensorKind>, reason: String) {
        for (id, watcher) in watchers {
            for stream in Array(watcher.watches.keys) where !CapturePlan.kinds(for: stream).required.isDisjoint(with: kinds) {
                setWatch(nil, of: stream, for: id)
                clients.send(Ended(stream: stream, reason: reason), to: id)
            }
        }
    }

    /// One encoded line per reference frame, without a dictionary's allocation.
    private struct LinesByFrame {
        private var lines: (ByteBuffer?, ByteBuffer?, ByteBuffer?, ByteBuffer?)

        subscript(frame: AttitudeReferenceFrame) -> ByteBuffer? {
            get {
                switch frame {
                case .xArbitraryZVertical: lines.0
                case .xArbitraryCorrectedZVertical: lines.1
                case .xMagneticNorthZVertical: lines.2
                case .xTrueNorthZVertical: lines.3
                }
            }
            set {
                switch frame {
                case .xArbitraryZVertical: lines.0 = newValue
                case .xArbitraryCorrectedZVertical: lines.1 = newValue
                case .xMagneticNorthZVertical: lines.2 = newValue
                case .xTrueNorthZVertical: lines.3 = newValue
                }
            }
        }
    }
}
