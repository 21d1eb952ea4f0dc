import Logging
import MotionCore
import MotionSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Where the machine is, from GeoClue on the system bus, asked for only while `want(true)` holds:
/// a client of GeoClue 2's documented interface (`Manager.GetClient`; the client's `DesktopId`,
/// `RequestedAccuracyLevel` and `DistanceThreshold`, `Start`, `Stop` and `LocationUpdated`; the
/// location's `Latitude`, `Longitude` and `Altitude`), on a thread of its own. Whether motiond may
/// know is GeoClue's decision (its configuration lists motiond as a system component, docs/dbus.md).
final class GeoClueClient: Sendable {
    /// GeoClue's well-known name on the bus.
    static let busName = "org.freedesktop.GeoClue2"
    /// The name motiond gives itself, which GeoClue's configuration lists (docs/dbus.md).
    static let desktopID = "motiond"
    /// City (GClueAccuracyLevel 4): the declination changes by a fraction of a degree over tens of km
    /// outside the polar regions, so no finer place is asked for.
    static let accuracyLevel: UInt32 = 4
    /// Metres moved before GeoClue tells again ("a few km").
    static let distanceThreshold: UInt32 = 5000
    /// How long the last `Stop` may take to leave at motiond's stop, ms: a bus that does not take it
    /// by then is not answering, and must not hold SIGTERM.
    static let farewellPatience: Int64 = 500
    /// The shortest time between two `GetClient`s, ns: `Bus.methodCallTimeout`. A GeoClue that exits
    /// or crashes on `GetClient` (the bus driver answers NoReply at once, and its name changes owner)
    /// is activated again at most this often, not in a tight loop; one that gave a client and is
    /// started again later is asked at once.
    static let askInterval = Int64(Bus.methodCallTimeout) * 1000

    /// A client GeoClue made for motiond: the unique bus name of the GeoClue that made it (only that
    /// connection's signals are taken: a signal's well-known sender is not checked locally) and its path.
    private struct Client: Hashable {
        var owner: String
        var path: String
    }

    /// What the bus thread has done about GeoClue.
    private enum State: Equatable {
        case idle
        /// `GetClient` sent, its answer not yet here.
        case asking
        case started(Client)
        case stopped(Client)
        /// GeoClue is not there, or refused: asked again once nobody wants it and somebody does again.
        case unavailable
    }

    private let thread: WakeableThread
    /// The connection; used by the bus thread only once `start` has run.
    private nonisolated(unsafe) let bus: Bus
    /// The bus thread's alone.
    private nonisolated(unsafe) var state = State.idle
    /// The clients whose `LocationUpdated` is followed (each once: a match stays as long as the bus).
    private nonisolated(unsafe) var followed: Set<Client> = []
    /// The client told to `Start` and not yet to `Stop`, whatever `state` became since (a GeoClue
    /// asked again keeps the same client for the same connection): the bus thread's alone.
    private nonisolated(unsafe) var locating: Client?
    private let wanted = Atomic<Bool>(false)
    private let logger: Logger
    /// The warnings a peer can provoke by the thousand (signals, replies): a few a minute. The bus
    /// thread's alone.
    private nonisolated(unsafe) var warnings: WarningLimiter
    /// Whether an implausible altitude was said in the journal (once is enough). The bus thread's alone.
    private nonisolated(unsafe) var warnedOfAltitude = false
    /// When the last `GetClient` that has not given a client was sent, monotonic ns. The bus thread's alone.
    private nonisolated(unsafe) var askedAt: Int64?
    private let located: @Sendable (GeographicLocation) -> Void

    /// Connects to the bus at `address`, or to the system bus; `located` gets each place GeoClue
    /// gives, on the bus thread.
    init(address: String? = nil, logger: Logger, located: @escaping @Sendable (GeographicLocation) -> Void) throws(BusError) {
        do {
            thread = try WakeableThread(name: "geoclue")
        } catch {
            throw BusError(call: "eventfd", code: error.rawValue)
        }
        bus = try Bus(address: address)
        self.logger = logger
        warnings = WarningLimiter(logger: logger)
        self.located = located
        // GeoClue gone or started again: its clients went with it, so a new one is asked for.
        try bus.subscribe(
            "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(Self.busName)'",
            failed: { [logger] error in logger.warning("a GeoClue started again will not be seen", metadata: ["error": "\(error)"]) }
        ) { [weak self] signal in self?.geoClueOwnerChanged(signal) }
    }

    /// Asks GeoClue for the place while `wanted`, and stops asking when not.
    func setLocationWanted(_ wanted: Bool) {
        self.wanted.store(wanted, ordering: .releasing)
        thread.wake()
    }

    /// Serves the bus on its thread until `stop`.
    func start() {
        let failure = thread.start { [self] in
            do {
                while !thread.isStopping {
                    do {
                        try follow()
                    } catch {
                        // A call that could not be sent (out of memory, the bus's queue full): given up
                        // until the next watch, the thread goes on.
                        warnings.warning("cannot ask GeoClue", metadata: ["error": "\(error)"])
                        state = .unavailable
                    }
                    try bus.process()
                    let waiting = try bus.waitingFor()
                    let deadline = [waiting.deadline, nextAsk].compactMap { $0 }.min()
                    let timeout = deadline.map { Int32(clamping: max(0, ($0 - Syscall.monotonicNanoseconds() + 999_999) / 1_000_000)) } ?? -1
                    _ = try thread.wait(for: waiting.events, on: waiting.descriptor, timeoutMilliseconds: timeout)
                        .mapError { BusError(call: "poll", code: $0.rawValue) }.get()
                }
                // Said to GeoClue on the way out, so that it does not go on locating for nobody.
                if let client = locating {
                    try call(client, "Stop") { _ in }
                    bus.flush(on: thread, milliseconds: Self.farewellPatience)
                }
            } catch {
                logger.error("lost the system bus: no more places from GeoClue", metadata: ["error": "\(error)"])
            }
            warnings.flush()
        }
        if let failure { logger.error("cannot ask GeoClue", metadata: ["error": "\(BusError(call: "pthread_create", code: failure.rawValue))"]) }
    }

    /// Ends the bus thread (telling GeoClue to stop) and waits for it.
    func stop() {
        thread.stop()
    }

    // MARK: The bus thread

    /// When a `GetClient` that is due waits for `askInterval` to pass since the last, monotonic ns.
    private var nextAsk: Int64? {
        guard state == .idle, wanted.load(ordering: .acquiring), let askedAt else { return nil }
        return askedAt + Self.askInterval
    }

    /// Brings GeoClue's client to what is wanted.
    private func follow() throws(BusError) {
        switch (wanted.load(ordering: .acquiring), state) {
        case (true, .idle):
            if let nextAsk, Syscall.monotonicNanoseconds() < nextAsk { break }
            try askForClient()
        case (true, .stopped(let client)): try startLocating(client)
        case (false, .started(let client)):
            state = .stopped(client)
        case (false, .unavailable): state = .idle
        default: break
        }
        // Whatever the state: a client started is stopped once nobody wants the place.
        if !wanted.load(ordering: .acquiring), let client = locating {
            locating = nil
            try call(client, "Stop") { [weak self] reply in self?.report(reply, "Stop") }
        }
    }

    /// `NameOwnerChanged(name, old, new)` for GeoClue's name: taken only from the bus itself (any
    /// connection may send a signal to motiond's, and sd-bus cannot check a well-known sender
    /// locally, issue 60); GeoClue's client went with its old owner, so a new one is asked for.
    private func geoClueOwnerChanged(_ signal: BusMessage) {
        guard signal.sender == "org.freedesktop.DBus" else {
            return warnings.warning("ignored a NameOwnerChanged that did not come from the bus", metadata: ["sender": "\(signal.sender ?? "none")"])
        }
        if let client = locating, (try? signal.readString()) == Self.busName, (try? signal.readString()) == client.owner { locating = nil }
        state = .idle
        thread.wake()
    }

    private func askForClient() throws(BusError) {
        state = .asking
        let sent = Syscall.monotonicNanoseconds()
        askedAt = sent
        let get = try bus.newMethodCall(
            destination: Self.busName, path: "/org/freedesktop/GeoClue2/Manager", interface: "org.freedesktop.GeoClue2.Manager", member: "GetClient")
        try bus.call(get) { [weak self] reply in
            guard let self, state == .asking else { return }
            // Unanswered in `Bus.methodCallTimeout` (sd-bus's own error): the bus or GeoClue is slow (a
            // bus driver at boot), not absent, so it is asked again rather than given up until the
            // next watch; one call per `askInterval` while it stays silent. A NoReply before then is
            // the bus driver's: GeoClue exited or crashed without answering, and asking again at
            // once would activate it in a loop; its name's next owner (`geoClueOwnerChanged`) or the
            // next watch asks again, `askInterval` after this call at the soonest.
            if reply.error?.name == "org.freedesktop.DBus.Error.NoReply", Syscall.monotonicNanoseconds() - sent >= Self.askInterval {
                warnings.warning("GeoClue has not answered GetClient: asking again")
                state = .idle
                return thread.wake()
            }
            do throws(BusError) {
                guard !report(reply, "GetClient"), let owner = reply.sender else {
                    state = .unavailable
                    return
                }
                let client = Client(owner: owner, path: try reply.readObjectPath())
                askedAt = nil  // answered: a GeoClue started again later is asked at once
                try configure(client)
                if wanted.load(ordering: .acquiring) { try startLocating(client) } else { state = .stopped(client) }
            } catch {
                warnings.warning("GeoClue's client cannot be set up", metadata: ["error": "\(error)"])
                state = .unavailable
            }
        }
    }

    /// Names motiond, asks for a city's accuracy and a new place every few km, and follows the client's
    /// `LocationUpdated`, from the GeoClue that made it only.
    private func configure(_ client: Client) throws(BusError) {
        if followed.insert(client).inserted {
            try bus.subscribe(
                "type='signal',sender='\(client.owner)',path='\(client.path)',interface='org.freedesktop.GeoClue2.Client',member='LocationUpdated'",
                failed: { [logger] error in logger.warning("GeoClue's places will not be seen", metadata: ["error": "\(error)"]) }
            ) { [weak self] signal in self?.locationUpdated(signal, of: client) }
        }
        try set("DesktopId", of: client, as: "s") { v throws(BusError) in try v.append(Self.desktopID) }
        try set("RequestedAccuracyLevel", of: client, as: "u") { v throws(BusError) in try v.append(Self.accuracyLevel) }
        try set("DistanceThreshold", of: client, as: "u") { v throws(BusError) in try v.append(Self.distanceThreshold) }
    }

    /// Sets the client's property `name`, of D-Bus type `type`, to what `value` appends.
    private func set(_ name: String, of client: Client, as type: String, _ value: (BusMessage) throws(BusError) -> Void) throws(BusError) {
        let set = try bus.newMethodCall(destination: client.owner, path: client.path, interface: "org.freedesktop.DBus.Properties", member: "Set")
        try set.append("org.freedesktop.GeoClue2.Client")
        try set.append(name)
        try set.append(container: "v", of: type, value)
        try bus.call(set) { [weak self] reply in self?.report(reply, "setting \(name)") }
    }

    private func startLocating(_ client: Client) throws(BusError) {
        state = .started(client)
        locating = client
        try call(client, "Start") { [weak self] reply in
            // A refusal ends this start only (a later one may have begun meanwhile).
            guard let self, report(reply, "Start"), state == .started(client) else { return }
            state = .unavailable
            locating = nil
        }
    }

    private func call(_ client: Client, _ member: String, answer: @escaping (BusMessage) -> Void) throws(BusError) {
        try bus.call(
            try bus.newMethodCall(destination: client.owner, path: client.path, interface: "org.freedesktop.GeoClue2.Client", member: member), answer: answer)
    }

    /// Whether `reply` is an error, which is logged, with what to do where there is something to do.
    @discardableResult
    private func report(_ reply: BusMessage, _ what: String) -> Bool {
        guard let error = reply.error else { return false }
        let metadata: Logger.Metadata = ["error": "\(error.name): \(error.message)"]
        switch error.name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
            logger.notice("no GeoClue on the system bus: xTrueNorthZVertical needs motiond.conf's location or declination")
        case "org.freedesktop.DBus.Error.AccessDenied":
            warnings.warning("GeoClue refused \(what): list motiond in its configuration (docs/dbus.md)", metadata: metadata)
        default:
            warnings.warning("GeoClue answered \(what) with an error", metadata: metadata)
        }
        return true
    }

    /// `LocationUpdated(o old, o new)` of `client`: the new location's coordinates, read with `GetAll`.
    /// GeoClue's locations are the client's children (`…/Client/1/Location/0`); another path is ignored.
    private func locationUpdated(_ signal: BusMessage, of client: Client) {
        do throws(BusError) {
            _ = try signal.readObjectPath()
            let location = try signal.readObjectPath()
            guard location.hasPrefix(client.path + "/") else {
                return warnings.warning("GeoClue named a location that is not its client's", metadata: ["location": "\(location)"])
            }
            let getAll = try bus.newMethodCall(destination: client.owner, path: location, interface: "org.freedesktop.DBus.Properties", member: "GetAll")
            try getAll.append("org.freedesktop.GeoClue2.Location")
            try bus.call(getAll) { [weak self] reply in
                guard let self, !report(reply, "reading the location") else { return }
                do throws(BusError) {
                    let values = try reply.readDoubleProperties()
                    guard let latitude = values["Latitude"], let longitude = values["Longitude"],
                        let place = GeographicLocation(latitude: latitude, longitude: longitude, altitude: altitude(values["Altitude"]))
                    else {
                        return warnings.warning("GeoClue gave a location without a place on Earth", metadata: ["values": "\(values)"])
                    }
                    located(place)
                } catch {
                    warnings.warning("GeoClue's location cannot be read", metadata: ["error": "\(error)"])
                }
            }
        } catch {
            warnings.warning("GeoClue's LocationUpdated cannot be read", metadata: ["error": "\(error)"])
        }
    }

    /// The altitude to take from GeoClue's `Altitude`, m: sea level for one it does not know (it gives
    /// −Double.greatestFiniteMagnitude) and for an implausible one, which is said once; the latitude
    /// and longitude stand without it (the declination changes by hundredths of a degree per km up).
    private func altitude(_ given: Double?) -> Double {
        guard let given, given > -1e300 else { return 0 }
        guard !GeographicLocation.plausibleAltitudes.contains(given) else { return given }
        if !warnedOfAltitude {
            warnedOfAltitude = true
            logger.warning("GeoClue gave an implausible altitude: its places are taken at sea level", metadata: ["metres": "\(given)"])
        }
        return 0
    }
}
