import CSDBus
import FoundationEssentials
import Logging
import MotionSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// iio-sensor-proxy's D-Bus interface (docs/dbus.md) on a bus, served by sd-bus from a thread of its
/// own: the two objects' properties, `Introspect`, and the claim methods, with claims counted per
/// sender, held until the sensor's first value, and each change told only to the sensor's claimants.
///
/// sd-bus is not to be used from two threads: the owner sets values and readiness from its own thread
/// (`publish`, `markReady`), and the bus thread, woken through a pipe, announces them.
final class SensorProxyService: Sendable {
    static let busName = "net.hadess.SensorProxy"

    /// The values of the interface's properties.
    struct Properties: Sendable, Equatable {
        var hasAccelerometer = false
        var accelerometerOrientation = "undefined"
        var accelerometerTilt = "vertical"
        var hasAmbientLight = false
        var lightLevelUnit = "lux"
        var lightLevel = 0.0
        var hasProximity = false
        var proximityNear = false
        var hasCompass = false
        /// Degrees from magnetic north, clockwise; 0 until the first value, as upstream's.
        var compassHeading = 0.0
    }

    /// What went wrong with the bus, and where.
    struct BusError: Error, CustomStringConvertible {
        var operation: String
        var code: Int32
        var description: String {
            if operation == "sd_bus_request_name" && code == EEXIST {
                return "\(SensorProxyService.busName) is owned by another program on the bus (iio-sensor-proxy? see docs/dbus.md to switch over)"
            }
            return "sd-bus: \(operation) failed (\(String(cString: strerror(code))))"
        }
    }

    /// One served object: its path and its interface.
    struct Object: Sendable {
        var path: String
        var interface: String
    }

    static let main = Object(path: "/net/hadess/SensorProxy", interface: "net.hadess.SensorProxy")
    static let compass = Object(path: "/net/hadess/SensorProxy/Compass", interface: "net.hadess.SensorProxy.Compass")
    static let objects = [main, compass]

    /// Upstream's introspection of `object`, written from the property and method tables (so that
    /// what is announced is what is served), in upstream's order, with the standard interfaces.
    static func introspection(of object: Object) -> String {
        let defaults = Properties()
        let properties = table.filter { $0.object.path == object.path }.map { entry in
            #"<property type="\#(entry.value(defaults).signature)" name="\#(entry.name)" access="read"/>"#
        }
        let claims = methods.filter { $0.interface == object.interface }.map { #"<method name="\#($0.name)"/>"# }
        let children = object.path == main.path ? #"<node name="Compass"/>"# : ""
        return introspection(interface: object.interface, members: (properties + claims).joined(separator: "\n"), children: children)
    }

    /// Upstream's introspection of an object, with the standard interfaces every D-Bus service has.
    private static func introspection(interface: String, members: String, children: String) -> String {
        """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
        "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>
          <interface name="org.freedesktop.DBus.Properties">
            <method name="Get">
              <arg type="s" name="interface_name" direction="in"/>
              <arg type="s" name="property_name" direction="in"/>
              <arg type="v" name="value" direction="out"/>
            </method>
            <method name="GetAll">
              <arg type="s" name="interface_name" direction="in"/>
              <arg type="a{sv}" name="properties" direction="out"/>
            </method>
            <method name="Set">
              <arg type="s" name="interface_name" direction="in"/>
              <arg type="s" name="property_name" direction="in"/>
              <arg type="v" name="value" direction="in"/>
            </method>
            <signal name="PropertiesChanged">
              <arg type="s" name="interface_name"/>
              <arg type="a{sv}" name="changed_properties"/>
              <arg type="as" name="invalidated_properties"/>
            </signal>
          </interface>
          <interface name="org.freedesktop.DBus.Introspectable">
            <method name="Introspect">
              <arg type="s" name="xml_data" direction="out"/>
            </method>
          </interface>
          <interface name="org.freedesktop.DBus.Peer">
            <method name="Ping"/>
            <method name="GetMachineId">
              <arg type="s" name="machine_uuid" direction="out"/>
            </method>
          </interface>
          <interface name="\(interface)">
        \(members.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
          </interface>
          \(children)
        </node>
        """
    }

    /// A property's value on the wire.
    enum Value: Equatable {
        case boolean(Bool), string(String), double(Double)

        /// Its D-Bus type.
        var signature: String {
            switch self {
            case .boolean: "b"
            case .string: "s"
            case .double: "d"
            }
        }
    }

    /// Every property: its object, its name, the sensor whose claimants are told of its changes
    /// (`nil`: everyone), and its value.
    private static let table: [(object: Object, name: String, sensor: ClaimBook.Sensor?, value: @Sendable (Properties) -> Value)] = [
        (main, "HasAccelerometer", nil, { .boolean($0.hasAccelerometer) }),
        (main, "AccelerometerOrientation", .accelerometer, { .string($0.accelerometerOrientation) }),
        (main, "AccelerometerTilt", .accelerometer, { .string($0.accelerometerTilt) }),
        (main, "HasAmbientLight", nil, { .boolean($0.hasAmbientLight) }),
        (main, "LightLevelUnit", .light, { .string($0.lightLevelUnit) }),
        (main, "LightLevel", .light, { .double($0.lightLevel) }),
        (main, "HasProximity", nil, { .boolean($0.hasProximity) }),
        (main, "ProximityNear", .proximity, { .boolean($0.proximityNear) }),
        (compass, "HasCompass", nil, { .boolean($0.hasCompass) }),
        (compass, "CompassHeading", .compass, { .double($0.compassHeading) }),
    ]

    /// A claim method: its name, interface, sensor, and whether it claims or releases.
    typealias Method = (name: String, interface: String, sensor: ClaimBook.Sensor, claims: Bool)

    /// The claim methods, in upstream's order.
    private static let methods: [Method] = [
        ("ClaimAccelerometer", main.interface, .accelerometer, true), ("ReleaseAccelerometer", main.interface, .accelerometer, false),
        ("ClaimLight", main.interface, .light, true), ("ReleaseLight", main.interface, .light, false),
        ("ClaimProximity", main.interface, .proximity, true), ("ReleaseProximity", main.interface, .proximity, false),
        ("ClaimCompass", compass.interface, .compass, true), ("ReleaseCompass", compass.interface, .compass, false),
    ]

    /// A claim waits this long at most for its sensor's first value, ns (a sensor that gives none
    /// must not hang its client).
    static let claimPatience: Int64 = 3_000_000_000

    /// What the owner's thread and the bus thread share.
    private struct Shared {
        var properties = Properties()
        /// Sensors whose first value is in `properties`, or that are absent: their claims return.
        var ready: Set<ClaimBook.Sensor> = []
        var claims = ClaimBook()
    }

    private let shared = Mutex(Shared())
    /// The bus thread's own: the values last announced, and the claims waiting for their sensor.
    private nonisolated(unsafe) var announced = Properties()
    private nonisolated(unsafe) var heldClaims: [(call: OpaquePointer, sensor: ClaimBook.Sensor, deadline: Int64)] = []
    /// Wakes the bus thread to announce new values or to stop.
    private let wake: (read: Int32, write: Int32)
    /// Told when a sensor's first claim comes (`true`) and its last goes (`false`), on the bus's thread.
    private let demand: @Sendable (ClaimBook.Sensor, Bool) -> Void
    /// Where claimants leaving, polkit's refusals and a lost bus are told.
    private let logger: Logger
    private let stopRequested = Atomic<Bool>(false)
    /// The bus thread: `stop` joins it, so that it returns only once nothing more is handed to the owner.
    private let thread = Mutex<OSThread?>(nil)
    private let started = Atomic<Bool>(false)
    /// The connection; used by the service's thread only once `start` has run.
    private nonisolated(unsafe) let bus: OpaquePointer

    /// Connects to the bus at `address` (a D-Bus address such as `unix:path=…`), or to the system bus,
    /// and takes the name `net.hadess.SensorProxy`.
    init(
        address: String? = nil, logger: Logger = Logger(label: "motiond.dbus"),
        demand: @escaping @Sendable (ClaimBook.Sensor, Bool) -> Void = { _, _ in }
    ) throws(BusError) {
        self.demand = demand
        self.logger = logger
        guard case .success(let ends) = Syscall.makeWakePipe() else { throw BusError(operation: "pipe", code: currentErrno()) }
        do {
            bus = try Self.connect(address: address)
        } catch {
            Syscall.close(ends.0)
            Syscall.close(ends.1)
            throw error
        }
        wake = (ends.0, ends.1)
        // From here on a failure runs deinit, which closes both.
        let handler: sd_bus_message_handler_t = { message, userdata, _ in
            Unmanaged<SensorProxyService>.fromOpaque(userdata!).takeUnretainedValue().handle(message!)
        }
        for object in Self.objects {
            try Self.check("sd_bus_add_object \(object.path)") {
                sd_bus_add_object(bus, nil, object.path, handler, Unmanaged.passUnretained(self).toOpaque())
            }
        }
        // A claimant that leaves the bus (exits, crashes) releases what it claimed.
        let ownerChanged: sd_bus_message_handler_t = { message, userdata, _ in
            Unmanaged<SensorProxyService>.fromOpaque(userdata!).takeUnretainedValue().nameOwnerChanged(message!)
        }
        try Self.check("sd_bus_add_match") {
            sd_bus_add_match(
                bus, nil, "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged'",
                ownerChanged, Unmanaged.passUnretained(self).toOpaque())
        }
        try Self.check("sd_bus_request_name") { sd_bus_request_name(bus, Self.busName, 0) }
    }

    /// A started connection to the bus at `address`, or to the system bus; nothing left open on failure.
    private static func connect(address: String?) throws(BusError) -> OpaquePointer {
        var connection: OpaquePointer?
        do {
            if let address {
                try check("sd_bus_new") { sd_bus_new(&connection) }
                try check("sd_bus_set_address") { sd_bus_set_address(connection, address) }
                try check("sd_bus_set_bus_client") { sd_bus_set_bus_client(connection, 1) }
                try check("sd_bus_start") { sd_bus_start(connection) }
            } else {
                try check("sd_bus_open_system") { sd_bus_open_system(&connection) }
            }
        } catch {
            sd_bus_unref(connection)
            throw error
        }
        return connection!
    }

    deinit {
        for held in heldClaims { sd_bus_message_unref(held.call) }
        sd_bus_flush_close_unref(bus)
        Syscall.close(wake.read)
        Syscall.close(wake.write)
    }

    /// The senders (unique bus names) that hold a claim on `sensor`.
    func claimants(of sensor: ClaimBook.Sensor) -> Set<String> {
        shared.withLock { $0.claims.claimants(of: sensor) }
    }

    /// Sets the properties' values; the bus thread tells the claimants what changed.
    func publish(_ values: Properties) {
        shared.withLock { $0.properties = values }
        Syscall.wake(wake.write)
    }

    /// Says that `sensor`'s first value is in the properties, or that it is absent: the claims
    /// waiting for it return.
    func markReady(_ sensor: ClaimBook.Sensor) {
        guard shared.withLock({ $0.ready.insert(sensor).inserted }) else { return }
        Syscall.wake(wake.write)
    }

    /// Serves the bus on a thread of its own until `stop`.
    func start() {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        let thread = OSThread(name: "dbus") { [self] in
            announced = shared.withLock { $0.properties }
            while !stopRequested.load(ordering: .relaxed) {
                var processed: Int32
                repeat { processed = sd_bus_process(bus, nil) } while processed > 0
                if processed < 0 {
                    return lostBus(BusError(operation: "sd_bus_process", code: -processed))
                }
                // Sleep until the bus has something, the owner wakes us, or the next deadline.
                switch Syscall.wait(for: Int16(sd_bus_get_events(bus)), on: sd_bus_get_fd(bus), orWake: wake.read, timeoutMilliseconds: timeout()) {
                case .success((_, true)):
                    var drain = [UInt8](repeating: 0, count: 64)
                    _ = drain.withUnsafeMutableBytes { Syscall.read(wake.read, into: $0) }
                    announceChanges()
                case .success:
                    break
                case .failure(let error):
                    return lostBus(BusError(operation: "poll", code: error.rawValue))
                }
                answerHeldClaims()
            }
        }
        if let failure = thread.start() {
            return lostBus(BusError(operation: "pthread_create", code: failure.rawValue))
        }
        self.thread.withLock { $0 = thread }
    }

    /// Ends the bus thread and waits for it (one turn of its loop; nothing in it blocks), so that no
    /// claim reaches the owner afterwards.
    func stop() {
        guard !stopRequested.exchange(true, ordering: .relaxed) else { return }
        Syscall.wake(wake.write)
        thread.withLock { $0 }?.join()
    }

    private func lostBus(_ error: BusError) {
        logger.error("lost the system bus: D-Bus clients are no longer served (the socket still is)", metadata: ["error": "\(error)"])
    }

    /// Milliseconds until sd-bus's next timeout (a method call's) or the first held claim's, −1: none.
    private func timeout() -> Int32 {
        var deadline = heldClaims.map(\.deadline).min() ?? .max
        var busTimeout: UInt64 = 0
        if sd_bus_get_timeout(bus, &busTimeout) > 0, busTimeout != .max { deadline = min(deadline, Int64(busTimeout) * 1000) }
        guard deadline != .max else { return -1 }
        let milliseconds = (deadline - Syscall.monotonicNanoseconds() + 999_999) / 1_000_000
        return Int32(clamping: max(0, milliseconds))
    }

    // MARK: Announcing

    /// Sends `PropertiesChanged` for what changed since the last announcement: a sensor's values to
    /// the senders that claimed it (each its own signal), the `Has…` properties to everyone.
    private func announceChanges() {
        let (now, claims) = shared.withLock { ($0.properties, $0.claims) }
        defer { announced = now }
        let changed = Self.table.filter { $0.value(now) != $0.value(announced) }
        for object in Self.objects {
            // One signal per sensor whose values changed, to each of its claimants; `nil`: everyone.
            for sensor in [nil] + ClaimBook.Sensor.allCases.map(Optional.some) {
                let names = changed.filter { $0.object.path == object.path && $0.sensor == sensor }.map(\.name)
                guard !names.isEmpty else { continue }
                let destinations: [String?] = sensor.map { claims.claimants(of: $0).sorted() } ?? [nil]
                for destination in destinations { sendPropertiesChanged(names, of: object, values: now, to: destination) }
            }
        }
    }

    private func sendPropertiesChanged(_ names: [String], of object: Object, values: Properties, to destination: String?) {
        var signal: OpaquePointer?
        guard sd_bus_message_new_signal(bus, &signal, object.path, "org.freedesktop.DBus.Properties", "PropertiesChanged") >= 0,
            let signal
        else { return }
        defer { sd_bus_message_unref(signal) }
        if let destination { sd_bus_message_set_destination(signal, destination) }
        appendString(signal, object.interface)
        appendProperties(names, of: values, to: signal)
        sd_bus_message_open_container(signal, CChar(UInt8(ascii: "a")), "s")  // no invalidated properties
        sd_bus_message_close_container(signal)
        sd_bus_send(bus, signal, nil)
    }

    /// Returns the claims whose sensor is ready, or that waited `claimPatience`.
    private func answerHeldClaims() {
        guard !heldClaims.isEmpty else { return }
        let ready = shared.withLock { $0.ready }
        let now = Syscall.monotonicNanoseconds()
        heldClaims.removeAll { held in
            guard ready.contains(held.sensor) || now >= held.deadline else { return false }
            _ = reply(to: held.call) { _ in }
            sd_bus_message_unref(held.call)
            return true
        }
    }

    private static func check(_ operation: String, _ call: () -> Int32) throws(BusError) {
        let result = call()
        if result < 0 { throw BusError(operation: operation, code: -result) }
    }

    // MARK: Calls

    /// Answers one call to an object; 0 leaves it to sd-bus (an unknown method error).
    private func handle(_ message: OpaquePointer) -> Int32 {
        guard let path = sd_bus_message_get_path(message).map({ String(cString: $0) }),
            let object = Self.objects.first(where: { $0.path == path }),
            let interface = sd_bus_message_get_interface(message).map({ String(cString: $0) }),
            let member = sd_bus_message_get_member(message).map({ String(cString: $0) })
        else { return 0 }
        switch (interface, member) {
        case ("org.freedesktop.DBus.Introspectable", "Introspect"):
            return reply(to: message) { reply in appendString(reply, Self.introspection(of: object)) }
        case ("org.freedesktop.DBus.Properties", "Get"):
            guard readString(message) == object.interface, let name = readString(message) else { return 0 }
            guard Self.table.contains(where: { $0.object.path == path && $0.name == name }) else {
                return replyError(to: message, name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no property \(name)")
            }
            let values = shared.withLock { $0.properties }
            return reply(to: message) { reply in append(property: name, of: values, to: reply) }
        case ("org.freedesktop.DBus.Properties", "GetAll"):
            guard readString(message) == object.interface else { return 0 }
            let values = shared.withLock { $0.properties }
            let names = Self.table.filter { $0.object.path == path }.map(\.name)
            return reply(to: message) { reply in appendProperties(names, of: values, to: reply) }
        case ("org.freedesktop.DBus.Properties", "Set"):
            // Upstream's answer (GDBus's) to a write of a read-only property, word for word.
            _ = readString(message)
            let name = readString(message) ?? ""
            return replyError(to: message, name: "org.freedesktop.DBus.Error.InvalidArgs", message: "Property “\(name)” is not writable")
        case (object.interface, let name):
            guard let method = Self.methods.first(where: { $0.name == name && $0.interface == object.interface }),
                let sender = sd_bus_message_get_sender(message).map({ String(cString: $0) })
            else { return 0 }
            guard method.claims else { return perform(method, for: sender, call: message) }
            return authorize(sender, call: message) { [self] in perform(method, for: sender, call: message) }
        default:
            return 0
        }
    }

    /// Counts a claim or a release, and answers it: a release at once, a claim once its sensor is ready.
    private func perform(_ method: Method, for sender: String, call: OpaquePointer) -> Int32 {
        let (changed, ready) = shared.withLock { shared in
            let changed = method.claims ? shared.claims.claim(method.sensor, by: sender) : shared.claims.release(method.sensor, by: sender)
            // A sensor started anew gives a new first value; until then its claims wait.
            if changed && method.claims { shared.ready.remove(method.sensor) }
            return (changed, shared.ready.contains(method.sensor))
        }
        if changed { demand(method.sensor, method.claims) }
        guard method.claims && !ready else { return reply(to: call) { _ in } }
        heldClaims.append((sd_bus_message_ref(call), method.sensor, Syscall.monotonicNanoseconds() + Self.claimPatience))
        return 1
    }

    /// The polkit action a claim needs (systemd/net.hadess.SensorProxy.motiond.policy).
    static let claimAction = "net.hadess.SensorProxy.claim-sensor"

    /// Asks polkit, without waiting for it, whether `sender` may claim; runs `granted` if so (or if
    /// there is no polkit on the bus: then every claim is allowed), else refuses the call.
    private func authorize(_ sender: String, call: OpaquePointer, granted: @escaping () -> Int32) -> Int32 {
        var check: OpaquePointer?
        guard sd_bus_message_new_method_call(
            bus, &check, "org.freedesktop.PolicyKit1", "/org/freedesktop/PolicyKit1/Authority", "org.freedesktop.PolicyKit1.Authority",
            "CheckAuthorization") >= 0, let check
        else { return granted() }
        defer { sd_bus_message_unref(check) }
        // CheckAuthorization(subject (sa{sv}), action_id s, details a{ss}, flags u, cancellation_id s):
        // the subject is the caller's bus name; no interaction (flags 0): a sensor is no reason for a prompt.
        sd_bus_message_open_container(check, CChar(UInt8(ascii: "r")), "sa{sv}")
        appendString(check, "system-bus-name")
        sd_bus_message_open_container(check, CChar(UInt8(ascii: "a")), "{sv}")
        sd_bus_message_open_container(check, CChar(UInt8(ascii: "e")), "sv")
        appendString(check, "name")
        sd_bus_message_open_container(check, CChar(UInt8(ascii: "v")), "s")
        appendString(check, sender)
        sd_bus_message_close_container(check)
        sd_bus_message_close_container(check)
        sd_bus_message_close_container(check)
        sd_bus_message_close_container(check)
        appendString(check, Self.claimAction)
        sd_bus_message_open_container(check, CChar(UInt8(ascii: "a")), "{ss}")
        sd_bus_message_close_container(check)
        var flags: UInt32 = 0
        sd_bus_message_append_basic(check, CChar(UInt8(ascii: "u")), &flags)
        appendString(check, "")

        // The context travels through sd-bus as a retained pointer, taken back once by the answer.
        let context = Unmanaged.passRetained(PendingAuthorization(service: self, call: sd_bus_message_ref(call), granted: granted))
        let answered: sd_bus_message_handler_t = { reply, userdata, _ in
            let pending = Unmanaged<PendingAuthorization>.fromOpaque(userdata!).takeRetainedValue()
            defer { sd_bus_message_unref(pending.call) }
            return pending.service.authorization(reply!, for: pending)
        }
        let sent = sd_bus_call_async(bus, nil, check, answered, context.toOpaque(), 0)
        guard sent >= 0 else {
            sd_bus_message_unref(context.takeRetainedValue().call)
            logger.warning("cannot ask polkit; the claim is allowed", metadata: ["error": "\(BusError(operation: "sd_bus_call_async", code: -sent))"])
            return granted()
        }
        return 1
    }

    /// polkit's answer (or the bus's error when polkit is not there) to a claim's check.
    private func authorization(_ reply: OpaquePointer, for pending: PendingAuthorization) -> Int32 {
        if let error = sd_bus_message_get_error(reply) {
            let name = error.pointee.name.map { String(cString: $0) } ?? ""
            // No polkit on this bus: every claim is allowed, as without polkit upstream allows them.
            if name == "org.freedesktop.DBus.Error.ServiceUnknown" || name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
                return pending.granted()
            }
            let text = error.pointee.message.map { String(cString: $0) } ?? ""
            logger.warning("polkit refused to answer; the claim is refused", metadata: ["error": "\(name): \(text)"])
            return replyError(to: pending.call, name: "org.freedesktop.DBus.Error.AccessDenied", message: "polkit could not be asked: \(name): \(text)")
        }
        var authorized: Int32 = 0
        guard sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "r")), "bba{ss}") > 0,
            sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "b")), &authorized) > 0, authorized != 0
        else {
            return replyError(to: pending.call, name: "org.freedesktop.DBus.Error.AccessDenied", message: "polkit does not allow \(Self.claimAction)")
        }
        return pending.granted()
    }

    /// `NameOwnerChanged(name, old, new)`: a unique name with no new owner has left the bus.
    private func nameOwnerChanged(_ message: OpaquePointer) -> Int32 {
        guard let name = readString(message), let old = readString(message), let new = readString(message),
            name.hasPrefix(":"), name == old, new.isEmpty
        else { return 0 }
        let (held, last) = shared.withLock { shared in
            (ClaimBook.Sensor.allCases.filter { shared.claims.claimants(of: $0).contains(name) }, shared.claims.remove(name))
        }
        guard !held.isEmpty else { return 0 }
        logger.info("D-Bus claimant left; its claims are dropped", metadata: ["sender": "\(name)", "sensors": "\(held.map(\.rawValue))"])
        for sensor in last { demand(sensor, false) }
        return 0
    }

    /// Sends a method return whose body `fill` appends; 1: handled.
    private func reply(to call: OpaquePointer, _ fill: (OpaquePointer) -> Void) -> Int32 {
        var reply: OpaquePointer?
        guard sd_bus_message_new_method_return(call, &reply) >= 0, let reply else { return -ENOMEM }
        defer { sd_bus_message_unref(reply) }
        fill(reply)
        return sd_bus_send(bus, reply, nil) < 0 ? -EIO : 1
    }

    /// `a{sv}`: the named properties and their values.
    private func appendProperties(_ names: [String], of values: Properties, to message: OpaquePointer) {
        sd_bus_message_open_container(message, CChar(UInt8(ascii: "a")), "{sv}")
        for name in names {
            sd_bus_message_open_container(message, CChar(UInt8(ascii: "e")), "sv")
            appendString(message, name)
            append(property: name, of: values, to: message)
            sd_bus_message_close_container(message)
        }
        sd_bus_message_close_container(message)
    }

    /// A property's value as a variant.
    private func append(property name: String, of values: Properties, to message: OpaquePointer) {
        guard let value = Self.table.first(where: { $0.name == name })?.value(values) else { return }
        switch value {
        case .boolean(let flag):
            sd_bus_message_open_container(message, CChar(UInt8(ascii: "v")), "b")
            var bits: Int32 = flag ? 1 : 0  // D-Bus booleans are 32 bits
            sd_bus_message_append_basic(message, CChar(UInt8(ascii: "b")), &bits)
            sd_bus_message_close_container(message)
        case .string(let text):
            sd_bus_message_open_container(message, CChar(UInt8(ascii: "v")), "s")
            appendString(message, text)
            sd_bus_message_close_container(message)
        case .double(let number):
            sd_bus_message_open_container(message, CChar(UInt8(ascii: "v")), "d")
            var bits = number
            sd_bus_message_append_basic(message, CChar(UInt8(ascii: "d")), &bits)
            sd_bus_message_close_container(message)
        }
    }

    /// Sends an error reply `name` (a D-Bus error name) with `message`; 1: handled.
    private func replyError(to call: OpaquePointer, name: String, message: String) -> Int32 {
        name.withCString { name in
            message.withCString { text in
                var error = sd_bus_error(name: name, message: text, _need_free: 0)
                return sd_bus_reply_method_error(call, &error) < 0 ? -EIO : 1
            }
        }
    }
}

/// A claim waiting for polkit's answer: the service, the call, and what to do when it is granted.
private final class PendingAuthorization {
    let service: SensorProxyService
    let call: OpaquePointer
    let granted: () -> Int32
    init(service: SensorProxyService, call: OpaquePointer, granted: @escaping () -> Int32) {
        self.service = service
        self.call = call
        self.granted = granted
    }
}

private func appendString(_ message: OpaquePointer, _ text: String) {
    _ = text.withCString { sd_bus_message_append_basic(message, CChar(UInt8(ascii: "s")), $0) }
}

/// The next string argument of a message, if it has one.
private func readString(_ message: OpaquePointer) -> String? {
    var text: UnsafePointer<CChar>?
    guard sd_bus_message_read_basic(message, CChar(UInt8(ascii: "s")), &text) > 0, let text else { return nil }
    return String(cString: text)
}
