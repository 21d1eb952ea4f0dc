import Dispatch
import FoundationEssentials
import Logging
import MotionSystem
import Synchronization

/// iio-sensor-proxy's D-Bus interface (`SensorProxyInterface`, docs/dbus.md) on a bus, served from a
/// thread of its own: the two objects' properties, `Introspect`, and the claim methods (upstream's and
/// motiond's posture interface beside them, under the same rules), with claims
/// counted per sender, held until the sensor's first value, and each change told only to the
/// sensor's claimants.
///
/// sd-bus is not to be used from two threads: the owner sets values and readiness from its own thread
/// (`publish`, `markReady`), and the bus thread, woken (`WakeableThread`), announces them.
final class SensorProxyService: Sendable {
    typealias Properties = SensorProxyInterface.Properties

    /// A claim waits this long at most for its sensor's first value, ns (a sensor that gives none
    /// must not hang its client).
    static let claimPatience: Int64 = 3_000_000_000

    /// The polkit action a claim needs (systemd/net.hadess.SensorProxy.motiond.policy).
    static let claimAction = "net.hadess.SensorProxy.claim-sensor"

    /// What the owner's thread and the bus thread share.
    private struct Shared {
        var properties = Properties()
        /// Sensors whose first value is in `properties`, or that are absent: their claims return.
        var ready: Set<ClaimBook.Sensor> = []
        var claims = ClaimBook()
        /// Set by `republish`: the next announcement tells each claimant every value it claimed, and
        /// the `Has…` properties, changed or not.
        var republish = false
    }

    private let shared = Mutex(Shared())
    /// The bus thread's own: the values last announced, and the claims waiting for their sensor.
    private nonisolated(unsafe) var announced = Properties()
    private nonisolated(unsafe) var heldClaims: [(call: BusMessage, sensor: ClaimBook.Sensor, deadline: Int64)] = []
    /// Claims asked of polkit and not yet answered, by sender, and whether the sender has left the bus
    /// since: its claims are not recorded when polkit answers (the bus said it left before, so nothing
    /// would ever release them). An entry lives only while a check is under way.
    private nonisolated(unsafe) var authorizing: [String: (checks: Int, departed: Bool)] = [:]
    /// Told when a sensor's first claim comes (`true`) and its last goes (`false`), on the bus's thread.
    private let demand: @Sendable (ClaimBook.Sensor, Bool) -> Void
    /// Where claimants leaving, polkit's refusals, failed replies and a lost bus are told.
    private let logger: Logger
    /// The bus thread, woken to announce new values or to stop: `stop` joins it, so that it returns
    /// only once nothing more is handed to the owner.
    private let thread: WakeableThread
    private let started = Atomic<Bool>(false)
    /// The connection; used by the bus thread only once `start` has run.
    private nonisolated(unsafe) let bus: Bus
    /// The bus's answer to the name's request (nil: none yet); `named` is signalled by it and by
    /// `interruptWaiting`.
    private let naming = Mutex<Result<Void, BusError>?>(nil)
    private let named = DispatchSemaphore(value: 0)
    /// Told the bus's refusal of the name (another program owns it), whenever it comes: the owner
    /// ends the daemon rather than run it without D-Bus.
    private let refused: @Sendable (BusError) -> Void

    /// Connects to the bus at `address` (a D-Bus address such as `unix:path=…`), or to the system bus,
    /// serves the interface's objects and asks for the name `net.hadess.SensorProxy`, without waiting
    /// for the bus (`waitUntilNamed` does, bounded).
    init(
        address: String? = nil, logger: Logger = Logger(label: "motiond.dbus"),
        demand: @escaping @Sendable (ClaimBook.Sensor, Bool) -> Void = { _, _ in },
        refused: @escaping @Sendable (BusError) -> Void = { _ in }
    ) throws(BusError) {
        self.demand = demand
        self.refused = refused
        self.logger = logger
        do {
            thread = try WakeableThread(name: "dbus")
        } catch {
            throw BusError(call: "eventfd", code: error.rawValue)
        }
        bus = try Bus(address: address)
        // The handlers hold the service weakly: the bus, which keeps them, is the service's.
        for path in SensorProxyInterface.paths {
            try bus.serve(path: path) { [weak self] call throws(BusError) in try self?.handle(call, at: path) ?? false }
        }
        // A claimant that leaves the bus (exits, crashes) releases what it claimed.
        try bus.subscribe(
            "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged'",
            failed: { [logger] error in logger.error("claimants leaving the bus will not be seen: their claims stay", metadata: ["error": "\(error)"]) }
        ) { [weak self] signal in self?.nameOwnerChanged(signal) }
        try bus.requestName(SensorProxyInterface.busName) { [weak self] error in self?.nameAnswered(error) }
    }

    /// Waits until the bus has given the service its name, for at most `seconds`, or until
    /// `interruptWaiting`: whether it has (false: not yet; the service takes it when the bus answers).
    /// Throws the bus's refusal (`EEXIST`: another program owns the name), and the service then ends.
    func waitUntilNamed(seconds: Double) throws(BusError) -> Bool {
        _ = named.wait(timeout: .now() + seconds)
        switch naming.withLock({ $0 }) {
        case .success: return true
        case .failure(let error): throw error
        case nil: return false
        }
    }

    /// Makes a `waitUntilNamed` under way (or the next) return at once.
    func interruptWaiting() {
        named.signal()
    }

    /// The bus's answer to the name's request, on the bus thread: a refusal ends the bus thread and is
    /// told to `refused`.
    private func nameAnswered(_ error: BusError?) {
        naming.withLock { $0 = error.map { .failure($0) } ?? .success(()) }
        named.signal()
        if let error {
            logger.error("cannot serve D-Bus", metadata: ["error": "\(error)"])
            thread.requestStop()
            refused(error)
        } else {
            logger.info("serving D-Bus", metadata: ["name": "\(SensorProxyInterface.busName)"])
        }
    }

    /// The senders (unique bus names) that hold a claim on `sensor`.
    func claimants(of sensor: ClaimBook.Sensor) -> Set<String> {
        shared.withLock { $0.claims.claimants(of: sensor) }
    }

    /// Sets the properties' values; the bus thread tells the claimants what changed.
    func publish(_ values: Properties) {
        shared.withLock { $0.properties = values }
        thread.wake()
    }

    /// Says that `sensor`'s first value is in the properties, or that it is absent: the claims
    /// waiting for it return.
    func markReady(_ sensor: ClaimBook.Sensor) {
        guard shared.withLock({ $0.ready.insert(sensor).inserted }) else { return }
        thread.wake()
    }

    /// Says that `sensor`'s values are about to start anew (it has just appeared, or its watch is made
    /// again after its capture ended): claims made from now on wait for its first value, as a first
    /// claim does, rather than return with a value from before.
    func markPending(_ sensor: ClaimBook.Sensor) {
        shared.withLock { _ = $0.ready.remove(sensor) }
    }

    /// Tells each claimant, at the next announcement, every value of the sensors it claimed and the
    /// `Has…` properties, changed or not (after a resume: a client that missed a change, or whose
    /// bus dropped it around the sleep, learns the values as they are). Sent to the claimants only,
    /// each its own signal, as upstream sends values; a client that claimed nothing hears only changes.
    func republish() {
        shared.withLock { $0.republish = true }
        thread.wake()
    }

    /// Serves the bus on a thread of its own until `stop`.
    func start() {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        let failure = thread.start { [self] in
            announced = shared.withLock { $0.properties }
            do {
                while !thread.isStopping { try serveOnce() }
            } catch {
                logger.error("lost the system bus: D-Bus clients are no longer served (the socket still is)", metadata: ["error": "\(error)"])
            }
        }
        if let failure {
            logger.error("cannot serve D-Bus", metadata: ["error": "\(BusError(call: "pthread_create", code: failure.rawValue))"])
        }
    }

    /// Ends the bus thread and waits for it (one turn of its loop; nothing in it blocks), so that no
    /// claim reaches the owner afterwards.
    func stop() {
        thread.stop()
    }

    /// One turn of the bus thread: handles what arrived, then sleeps until the bus has something, the
    /// owner wakes it, or the next deadline (sd-bus's or a held claim's).
    private func serveOnce() throws(BusError) {
        try bus.process()
        let waiting = try bus.waitingFor()
        let deadline = min(heldClaims.map(\.deadline).min() ?? .max, waiting.deadline ?? .max)
        let timeout = deadline == .max ? -1 : Int32(clamping: max(0, (deadline - Syscall.monotonicNanoseconds() + 999_999) / 1_000_000))
        let wakeup = try thread.wait(for: waiting.events, on: waiting.descriptor, timeoutMilliseconds: timeout)
            .mapError { BusError(call: "poll", code: $0.rawValue) }.get()
        if wakeup.woken { announceChanges() }
        answerHeldClaims()
    }

    // MARK: Announcing

    /// Sends `PropertiesChanged` for what changed since the last announcement: a sensor's values to
    /// the senders that claimed it (each its own signal), the `Has…` properties to everyone. After
    /// `republish`, each claimant is then sent every value it claimed and the `Has…` properties.
    private func announceChanges() {
        let (now, claims, everything) = shared.withLock { shared in
            defer { shared.republish = false }
            return (shared.properties, shared.claims, shared.republish)
        }
        defer { announced = now }
        let changed = SensorProxyInterface.properties.filter { $0.value(now) != $0.value(announced) }
        for object in SensorProxyInterface.objects {
            // One signal per sensor whose values changed, to each of its claimants; `nil`: everyone.
            for sensor in [nil] + ClaimBook.Sensor.allCases.map(Optional.some) {
                let properties = changed.filter { $0.object == object && $0.sensor == sensor }
                guard !properties.isEmpty else { continue }
                let destinations: [String?] = sensor.map { claims.claimants(of: $0).sorted() } ?? [nil]
                for destination in destinations { send(properties, of: now, on: object, to: destination) }
            }
        }
        guard everything else { return }
        let claimants = Set(ClaimBook.Sensor.allCases.flatMap { claims.claimants(of: $0) })
        for claimant in claimants.sorted() {
            let sensors = Set(ClaimBook.Sensor.allCases.filter { claims.claimants(of: $0).contains(claimant) })
            for object in SensorProxyInterface.objects {
                // The object's `Has…` and the values of the sensors this claimant claimed; an object
                // none of whose sensors it claimed is left out.
                let properties = SensorProxyInterface.properties.filter { $0.object == object && ($0.sensor.map(sensors.contains) ?? true) }
                guard properties.contains(where: { $0.sensor != nil }) else { continue }
                send(properties, of: now, on: object, to: claimant)
            }
        }
    }

    /// Sends one `PropertiesChanged` of `object` with `properties`' values in `values`, to
    /// `destination` (nil: everyone).
    private func send(_ properties: [SensorProxyInterface.Property], of values: Properties, on object: SensorProxyInterface.Object, to destination: String?) {
        do {
            let signal = try bus.newSignal(path: object.path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")
            if let destination { try signal.setDestination(destination) }
            try signal.append(object.interface)
            try signal.append(properties, of: values)
            try signal.append(container: "a", of: "s")  // no invalidated properties
            try bus.send(signal)
        } catch {
            logger.warning("cannot tell a D-Bus client of a change", metadata: ["to": "\(destination ?? "everyone")", "error": "\(error)"])
        }
    }

    /// Returns the claims whose sensor is ready, or that waited `claimPatience`.
    private func answerHeldClaims() {
        guard !heldClaims.isEmpty else { return }
        let ready = shared.withLock { $0.ready }
        let now = Syscall.monotonicNanoseconds()
        heldClaims.removeAll { held in
            guard ready.contains(held.sensor) || now >= held.deadline else { return false }
            answering(held.call) { () throws(BusError) in try bus.send(bus.newReply(to: held.call)) }
            return true
        }
    }

    // MARK: Calls

    /// Answers one call to the object at `path`; `false` leaves it to sd-bus (no such method).
    private func handle(_ call: BusMessage, at path: String) throws(BusError) -> Bool {
        guard let interface = call.interface, let member = call.member else { return false }
        // The served interface `name` of this object, if it is one.
        func served(_ name: String) -> SensorProxyInterface.Object? {
            SensorProxyInterface.objects.first { $0.path == path && $0.interface == name }
        }
        // Each method's arguments are checked before anything is done, as GDBus (upstream's) does.
        switch (interface, member) {
        case ("org.freedesktop.DBus.Introspectable", "Introspect"):
            try call.expect(signature: "")
            let reply = try bus.newReply(to: call)
            try reply.append(SensorProxyInterface.introspection(of: path))
            try bus.send(reply)
        case ("org.freedesktop.DBus.Properties", "Get"):
            try call.expect(signature: "ss")
            guard let object = served(try call.readString()) else { return false }
            let name = try call.readString()
            guard let property = SensorProxyInterface.properties.first(where: { $0.object == object && $0.name == name }) else {
                try bus.replyError(to: call, name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no property \(name)")
                return true
            }
            let reply = try bus.newReply(to: call)
            try reply.append(variant: property.value(shared.withLock { $0.properties }))
            try bus.send(reply)
        case ("org.freedesktop.DBus.Properties", "GetAll"):
            try call.expect(signature: "s")
            guard let object = served(try call.readString()) else { return false }
            let reply = try bus.newReply(to: call)
            try reply.append(SensorProxyInterface.properties.filter { $0.object == object }, of: shared.withLock { $0.properties })
            try bus.send(reply)
        case ("org.freedesktop.DBus.Properties", "Set"):
            // Upstream's answer (GDBus's) to a write of a read-only property, word for word.
            try call.expect(signature: "ssv")
            _ = try call.readString()
            let name = try call.readString()
            try bus.replyError(to: call, name: "org.freedesktop.DBus.Error.InvalidArgs", message: "Property “\(name)” is not writable")
        case (_, _) where served(interface) != nil:
            guard let method = SensorProxyInterface.methods.first(where: { $0.name == member && $0.interface == interface }),
                let sender = call.sender
            else { return false }
            try call.expect(signature: "")
            try method.claims ? authorize(method, for: sender, call: call) : perform(method, for: sender, call: call)
        default:
            return false
        }
        return true
    }

    /// Counts a claim or a release, and answers it: a release at once, a claim once its sensor is ready.
    private func perform(_ method: SensorProxyInterface.Method, for sender: String, call: BusMessage) throws(BusError) {
        let (changed, ready) = shared.withLock { shared in
            let changed = method.claims ? shared.claims.claim(method.sensor, by: sender) : shared.claims.release(method.sensor, by: sender)
            // A sensor started anew gives a new first value; until then its claims wait.
            if changed && method.claims { shared.ready.remove(method.sensor) }
            return (changed, shared.ready.contains(method.sensor))
        }
        if changed { demand(method.sensor, method.claims) }
        if method.claims && !ready {
            heldClaims.append((call, method.sensor, Syscall.monotonicNanoseconds() + Self.claimPatience))
        } else {
            try bus.send(bus.newReply(to: call))
        }
    }

    /// Asks polkit, without waiting for it, whether `sender` may claim, and performs the claim if so
    /// (or if there is no polkit on the bus: then every claim is allowed), else refuses the call.
    private func authorize(_ method: SensorProxyInterface.Method, for sender: String, call: BusMessage) throws(BusError) {
        authorizing[sender, default: (0, false)].checks += 1
        do {
            try PolkitAuthority(bus: bus).check(sender, may: Self.claimAction) { [weak self] verdict in
                guard let self else { return }
                guard stillOnTheBus(afterAuthorizing: sender) else {
                    return logger.info("D-Bus claimant left before polkit answered; its claim is dropped", metadata: ["sender": "\(sender)"])
                }
                answering(call) { () throws(BusError) in
                    switch verdict {
                    case .allowed, .absent:
                        try perform(method, for: sender, call: call)
                    case .refused:
                        try bus.replyError(to: call, name: "org.freedesktop.DBus.Error.AccessDenied", message: "polkit does not allow \(Self.claimAction)")
                    case .failed(let name, let message):
                        logger.warning("polkit refused to answer; the claim is refused", metadata: ["error": "\(name): \(message)"])
                        try bus.replyError(to: call, name: "org.freedesktop.DBus.Error.AccessDenied", message: "polkit could not be asked: \(name): \(message)")
                    }
                }
            }
        } catch {
            _ = stillOnTheBus(afterAuthorizing: sender)
            logger.warning("cannot ask polkit; the claim is allowed", metadata: ["error": "\(error)"])
            try perform(method, for: sender, call: call)
        }
    }

    /// Counts an answer from polkit for `sender`; whether the sender is still on the bus.
    private func stillOnTheBus(afterAuthorizing sender: String) -> Bool {
        guard let (checks, departed) = authorizing[sender] else { return true }
        authorizing[sender] = checks > 1 ? (checks - 1, departed) : nil
        return !departed
    }

    /// Runs `answer`, a reply to `call` sent later than its handler; a failure is logged, since no
    /// handler is left to return it to sd-bus.
    private func answering(_ call: BusMessage, _ answer: () throws(BusError) -> Void) {
        do { try answer() } catch {
            logger.warning("cannot answer a D-Bus call", metadata: ["member": "\(call.member ?? "?")", "sender": "\(call.sender ?? "?")", "error": "\(error)"])
        }
    }

    /// `NameOwnerChanged(name, old, new)`: a unique name with no new owner has left the bus.
    private func nameOwnerChanged(_ signal: BusMessage) {
        guard let name = try? signal.readString(), let old = try? signal.readString(), let new = try? signal.readString(),
            name.hasPrefix(":"), name == old, new.isEmpty
        else { return }
        // Unique names are never given again (the bus counts up), so it cannot come back.
        authorizing[name]?.departed = true
        let (held, last) = shared.withLock { shared in
            (ClaimBook.Sensor.allCases.filter { shared.claims.claimants(of: $0).contains(name) }, shared.claims.remove(name))
        }
        guard !held.isEmpty else { return }
        logger.info("D-Bus claimant left; its claims are dropped", metadata: ["sender": "\(name)", "sensors": "\(held.map(\.rawValue))"])
        for sensor in last { demand(sensor, false) }
    }
}

extension BusMessage {
    /// `a{sv}`: `properties`' names and values.
    fileprivate func append(_ properties: [SensorProxyInterface.Property], of values: SensorProxyInterface.Properties) throws(BusError) {
        try append(container: "a", of: "{sv}") { array throws(BusError) in
            for property in properties {
                try array.append(container: "e", of: "sv") { entry throws(BusError) in
                    try entry.append(property.name)
                    try entry.append(variant: property.value(values))
                }
            }
        }
    }

    fileprivate func append(variant value: SensorProxyInterface.Value) throws(BusError) {
        try append(container: "v", of: value.signature) { variant throws(BusError) in
            switch value {
            case .boolean(let flag): try variant.append(flag)
            case .string(let text): try variant.append(text)
            case .double(let number): try variant.append(number)
            }
        }
    }
}
