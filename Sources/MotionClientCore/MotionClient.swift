import FoundationEssentials
import MotionSystem
import Synchronization
@_exported import MotionCore
@_exported import MotionWire

/// A client of motiond (docs/client.md): snapshots on request (pull) and streams of updates (push).
///
/// Requests share one connection, made on first use and made again after the daemon restarts;
/// each stream of updates has a connection of its own, which reconnects by itself.
public final class MotionClient: Sendable {
    /// The daemon's socket.
    public let socketPath: String
    /// Seconds a request waits for its reply (a first snapshot may wait up to 2 s for the sensors).
    public let timeout: Double
    private let connection = Mutex<LineConnection?>(nil)
    private let nextID = Atomic<Int>(1)

    /// A client of the daemon at `socketPath`: by default `$MOTIOND_SOCKET`, else the user's daemon
    /// (`$XDG_RUNTIME_DIR/motiond.sock`) if it is there, else the system's (`/run/motiond/motiond.sock`).
    public init(socketPath: String? = nil, timeout: Double = 5) {
        self.socketPath = socketPath ?? Self.defaultSocketPath()
        self.timeout = timeout
    }

    /// The socket used when none is given (see `init`).
    public static func defaultSocketPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let path = environment["MOTIOND_SOCKET"], !path.isEmpty { return path }
        if let runtime = environment["XDG_RUNTIME_DIR"], Syscall.exists(runtime + "/motiond.sock") {
            return runtime + "/motiond.sock"
        }
        return "/run/motiond/motiond.sock"
    }

    // MARK: Pull

    /// The latest value of each of `streams` (`motion` in `frame`). Blocks until the reply comes;
    /// if the sensors were not running the daemon starts them and waits for their first sample.
    public func snapshot(of streams: [StreamKind], frame: AttitudeReferenceFrame = .xArbitraryZVertical) throws(MotionClientError) -> Snapshot {
        let id = makeID()
        return try request(.poll(Request.Poll(id: id, streams: streams, frame: frame)), id: id, expecting: Snapshot.self)
    }

    /// `snapshot(of:frame:)` without blocking the caller's thread.
    public func snapshot(of streams: [StreamKind], frame: AttitudeReferenceFrame = .xArbitraryZVertical) async throws -> Snapshot {
        try await offThread { try self.snapshot(of: streams, frame: frame) }
    }

    /// The sensors the daemon has.
    public func devices() throws(MotionClientError) -> [DevicesReply.Device] {
        let id = makeID()
        return try request(.devices(id: id), id: id, expecting: DevicesReply.self).devices
    }

    /// The daemon's state: uptime, running sensors and their real rates, clients, drops, calibration.
    public func status() throws(MotionClientError) -> StatusReply {
        let id = makeID()
        return try request(.status(id: id), id: id, expecting: StatusReply.self)
    }

    /// The steps (`.pedometer`) or activities (`.activity`) between `from` and `to` (seconds of Unix
    /// time; `nil`: now), of the last 7 days (protocol 1.5, `HISTORY`).
    public func history(of stream: StreamKind, from: Double, to: Double? = nil) throws(MotionClientError) -> HistoryReply {
        let id = makeID()
        return try request(.history(Request.History(id: id, stream: stream, from: from, to: to)), id: id, expecting: HistoryReply.self)
    }

    private func makeID() -> RequestID { .integer(Int64(nextID.add(1, ordering: .relaxed).oldValue)) }

    private func request<M: ServerMessage>(_ request: Request, id: RequestID, expecting type: M.Type) throws(MotionClientError) -> M {
        try connection.withLock { (current: inout LineConnection?) throws(MotionClientError) -> M in
            // One retry on a fresh connection: the daemon may have restarted since the last request.
            for attempt in 0..<2 {
                do throws(MotionClientError) {
                    if current == nil { current = try LineConnection(socketPath: socketPath, timeout: timeout) }
                    return try current!.roundTrip(request, id: id, expecting: type, timeout: timeout)
                } catch {
                    current = nil
                    if case .connectionLost = error, attempt == 0 { continue }
                    throw error
                }
            }
            throw .connectionLost("unreachable")
        }
    }

    // MARK: Push

    /// One update of a watched stream: a stream's message (its case of `AnyServerMessage`, so that
    /// every stream of the catalogue is one), or `.dropped` when the daemon dropped messages of a
    /// stream because this client read too slowly. The subscription hands on nothing else.
    public typealias Update = AnyServerMessage

    /// Updates of `streams`, one every `interval` seconds (event streams when they change), `motion`
    /// in `frame`. A `latency` in seconds (0…10) lets the daemon hold samples up to that long and send
    /// them in batches, each with its own timestamp, so that it and the sensor wake less often.
    /// The stream reconnects after a daemon restart (`reconnects`); it ends with an error
    /// if a sensor goes away (`streamEnded`), or if the daemon cannot be reached and `reconnects` is off.
    public func updates(
        of streams: [StreamKind], interval: Double = 0.1, frame: AttitudeReferenceFrame = .xArbitraryZVertical, latency: Double = 0,
        reconnects: Bool = true
    ) -> AsyncThrowingStream<Update, any Error> {
        let (stream, continuation) = AsyncThrowingStream<Update, any Error>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        let subscription = watch(streams, interval: interval, frame: frame, latency: latency, reconnects: reconnects) { result in
            switch result {
            case .success(let update): continuation.yield(update)
            case .failure(let error): continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in subscription.cancel() }
        return stream
    }

    /// The callback form of `updates(of:interval:frame:latency:reconnects:)`: `handler` gets each update, on
    /// the subscription's own thread, until the subscription is cancelled or fails (then once with the error).
    @discardableResult
    public func watch(
        _ streams: [StreamKind], interval: Double = 0.1, frame: AttitudeReferenceFrame = .xArbitraryZVertical, latency: Double = 0,
        reconnects: Bool = true, handler: @escaping @Sendable (Result<Update, MotionClientError>) -> Void
    ) -> Subscription {
        let watch = Request.Watch(streams: streams, interval: interval, frame: frame, latency: latency != 0 ? latency : nil)
        let subscription = Subscription(socketPath: socketPath, watch: watch, reconnects: reconnects, timeout: timeout, handler: handler)
        subscription.start()
        return subscription
    }

    private func offThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        do {
            return try await OSThread.run(named: "motion-request", body)
        } catch let failure as Errno {
            // The body throws only `MotionClientError`: an errno is the thread that could not be made.
            throw MotionClientError.connectionLost("cannot start a thread for the request: \(failure)")
        }
    }
}

/// A running stream of updates; `cancel()` ends it.
public final class Subscription: Sendable {
    private let socketPath: String
    private let watch: Request.Watch
    private let reconnects: Bool
    private let timeout: Double
    private let handler: @Sendable (Result<MotionClient.Update, MotionClientError>) -> Void
    private let state = Mutex<(cancelled: Bool, connection: LineConnection?)>((false, nil))

    /// Seconds between attempts to reach a daemon that went away.
    static let retryInterval = 0.5

    init(
        socketPath: String, watch: Request.Watch, reconnects: Bool, timeout: Double,
        handler: @escaping @Sendable (Result<MotionClient.Update, MotionClientError>) -> Void
    ) {
        self.socketPath = socketPath
        self.watch = watch
        self.reconnects = reconnects
        self.timeout = timeout
        self.handler = handler
    }

    /// Whether `cancel()` was called.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Stops the updates: the handler gets nothing more, save the call already running, if any.
    public func cancel() {
        let connection = state.withLock { state in
            state.cancelled = true
            return state.connection
        }
        connection?.shutDown()
    }

    /// Runs the subscription on a thread of its own; if none can be made, the handler gets the error.
    func start() {
        if let failure = OSThread.startDetached(name: "motion-watch", body: { [self] in run() }) {
            handler(.failure(.connectionLost("cannot start the subscription's thread: \(failure)")))
        }
    }

    private func run() {
        var everConnected = false
        while !isCancelled {
            do throws(MotionClientError) {
                let connection = try LineConnection(socketPath: socketPath, timeout: timeout)
                let proceed = state.withLock { state in
                    state.connection = connection
                    return !state.cancelled
                }
                guard proceed else { return }
                everConnected = true
                try connection.send(.watch(watch))
                try read(connection)
            } catch {
                if isCancelled { return }
                switch error {
                case .streamEnded, .refused, .incompatibleProtocol:
                    handler(.failure(error))
                    return
                case .daemonNotRunning, .permissionDenied, .connectionLost, .timeout:
                    // A daemon that was there and went away (a restart) is waited for; one never reached is an error.
                    guard reconnects && everConnected else {
                        handler(.failure(error))
                        return
                    }
                    Syscall.sleep(nanoseconds: Int64(Self.retryInterval * 1e9))
                }
            }
        }
    }

    private func read(_ connection: LineConnection) throws(MotionClientError) {
        while true {
            let line = try connection.nextLine()
            if isCancelled { return }
            guard let update = try decode(line) else { continue }
            handler(.success(update))
        }
    }

    private func decode(_ line: [UInt8]) throws(MotionClientError) -> MotionClient.Update? {
        let message: AnyServerMessage
        do {
            message = try AnyServerMessage(line: line)
        } catch {
            // An error or an end this version cannot read (a later version's code) still ends the
            // stream: skipped, the caller would wait for updates that never come.
            switch error.className {
            case ErrorReply.className: throw .refused(code: .internal, message: "an error this client cannot read: \(error.problem)")
            case Ended.className:
                // Which stream it names is what could not be read: the first watched stands for it.
                throw .streamEnded(stream: watch.streams?.first ?? .motion, reason: "an end this client cannot read: \(error.problem)")
            default: return nil
            }
        }
        switch message {
        case .ended(let m): throw .streamEnded(stream: m.stream, reason: m.reason)
        case .error(let m): throw .refused(code: m.code, message: m.message)
        case .dropped: return message
        default:
            // A stream's message is an update; replies are not, nor classes a later minor version adds.
            return message.stream == nil ? nil : message
        }
    }
}
