import CSDBus
import Foundation
import MotionSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// iio-sensor-proxy's D-Bus interface (docs/dbus.md) on a bus, served by sd-bus from a thread of its
/// own. So far it answers `Introspect`, the properties (`Get`, `GetAll`) and the claim methods, and
/// counts claims per sender; `PropertiesChanged` and the compass object come next.
final class SensorProxyService: Sendable {
    static let busName = "net.hadess.SensorProxy"
    static let objectPath = "/net/hadess/SensorProxy"
    static let interface = "net.hadess.SensorProxy"

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
    }

    /// What went wrong with the bus, and where.
    struct BusError: Error, CustomStringConvertible {
        var operation: String
        var code: Int32
        var description: String { "sd-bus: \(operation) failed (\(String(cString: strerror(code))))" }
    }

    /// Upstream's introspection of the main object, member for member (docs/dbus.md).
    static let introspection = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
        "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>
          <interface name="net.hadess.SensorProxy">
            <property name="HasAccelerometer" type="b" access="read"/>
            <property name="AccelerometerOrientation" type="s" access="read"/>
            <property name="AccelerometerTilt" type="s" access="read"/>
            <property name="HasAmbientLight" type="b" access="read"/>
            <property name="LightLevelUnit" type="s" access="read"/>
            <property name="LightLevel" type="d" access="read"/>
            <property name="HasProximity" type="b" access="read"/>
            <property name="ProximityNear" type="b" access="read"/>
            <method name="ClaimAccelerometer"/>
            <method name="ReleaseAccelerometer"/>
            <method name="ClaimLight"/>
            <method name="ReleaseLight"/>
            <method name="ClaimProximity"/>
            <method name="ReleaseProximity"/>
          </interface>
          <interface name="org.freedesktop.DBus.Introspectable">
            <method name="Introspect"><arg name="xml_data" type="s" direction="out"/></method>
          </interface>
          <interface name="org.freedesktop.DBus.Properties">
            <method name="Get">
              <arg name="interface_name" type="s" direction="in"/><arg name="property_name" type="s" direction="in"/>
              <arg name="value" type="v" direction="out"/>
            </method>
            <method name="GetAll">
              <arg name="interface_name" type="s" direction="in"/><arg name="properties" type="a{sv}" direction="out"/>
            </method>
          </interface>
          <node name="Compass"/>
        </node>
        """

    private let properties = Mutex(Properties())
    /// The values last told to the claimants (the bus thread's own).
    private nonisolated(unsafe) var announced = Properties()
    /// Wakes the bus thread to announce new values: sd-bus is not to be used from two threads.
    private let wake: (read: Int32, write: Int32)
    private let claims = Mutex(ClaimBook())
    /// Told when a sensor's first claim comes (`true`) and its last goes (`false`), on the bus's thread.
    private let demand: @Sendable (ClaimBook.Sensor, Bool) -> Void
    private let stopRequested = Atomic<Bool>(false)
    /// The connection; used by the service's thread only once `start` has run.
    private nonisolated(unsafe) let bus: OpaquePointer

    /// Connects to the bus at `address` (a D-Bus address such as `unix:path=…`), or to the system bus,
    /// and takes the name `net.hadess.SensorProxy`.
    init(address: String? = nil, demand: @escaping @Sendable (ClaimBook.Sensor, Bool) -> Void = { _, _ in }) throws(BusError) {
        self.demand = demand
        guard case .success(let ends) = Syscall.makeWakePipe() else { throw BusError(operation: "pipe", code: currentErrno()) }
        wake = (ends.0, ends.1)
        var connection: OpaquePointer?
        if let address {
            try Self.check("sd_bus_new") { sd_bus_new(&connection) }
            try Self.check("sd_bus_set_address") { sd_bus_set_address(connection, address) }
            try Self.check("sd_bus_set_bus_client") { sd_bus_set_bus_client(connection, 1) }
            try Self.check("sd_bus_start") { sd_bus_start(connection) }
        } else {
            try Self.check("sd_bus_open_system") { sd_bus_open_system(&connection) }
        }
        bus = connection!
        let handler: sd_bus_message_handler_t = { message, userdata, _ in
            Unmanaged<SensorProxyService>.fromOpaque(userdata!).takeUnretainedValue().handle(message!)
        }
        try Self.check("sd_bus_add_object") {
            sd_bus_add_object(bus, nil, Self.objectPath, handler, Unmanaged.passUnretained(self).toOpaque())
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

    deinit {
        sd_bus_flush_close_unref(bus)
        Syscall.close(wake.read)
        Syscall.close(wake.write)
    }

    /// The senders (unique bus names) that hold a claim on `sensor`.
    func claimants(of sensor: ClaimBook.Sensor) -> Set<String> {
        claims.withLock { $0.claimants(of: sensor) }
    }

    /// Sets the properties' values; the bus thread tells the claimants what changed.
    func publish(_ values: Properties) {
        properties.withLock { $0 = values }
        Syscall.wake(wake.write)
    }

    /// Serves the bus on a thread of its own until `stop`.
    func start() {
        let thread = Thread { [self] in
            announced = properties.withLock { $0 }
            while !stopRequested.load(ordering: .relaxed) {
                // Everything queued, then wait for the bus or a wake (a stop is seen within 100 ms).
                var processed: Int32
                repeat { processed = sd_bus_process(bus, nil) } while processed > 0
                if processed < 0 { break }  // the bus went away: nothing more to serve (not yet reported)
                if case .success((_, true)) = Syscall.waitReadable(sd_bus_get_fd(bus), wake.read, timeoutMilliseconds: 100) {
                    var drain = [UInt8](repeating: 0, count: 64)
                    _ = drain.withUnsafeMutableBytes { Syscall.read(wake.read, into: $0) }
                    announceChanges()
                }
            }
        }
        thread.name = "D-Bus"
        thread.start()
    }

    func stop() {
        stopRequested.store(true, ordering: .relaxed)
    }

    /// Sends `PropertiesChanged` for what changed since the last announcement: a sensor's values to
    /// the senders that claimed it (each its own signal), the `Has…` properties to everyone.
    private func announceChanges() {
        let now = properties.withLock { $0 }
        defer { announced = now }
        let changed = Self.table.filter { $0.value(now) != $0.value(announced) }
        // One signal per sensor whose values changed, to each of its claimants; `nil`: everyone.
        for sensor in [nil] + ClaimBook.Sensor.allCases.map(Optional.some) {
            let names = changed.filter { $0.sensor == sensor }.map(\.name)
            guard !names.isEmpty else { continue }
            let destinations: [String?] = sensor.map { sensor in claims.withLock { $0.claimants(of: sensor) }.sorted() } ?? [nil]
            for destination in destinations { sendPropertiesChanged(names, of: now, to: destination) }
        }
    }

    private func sendPropertiesChanged(_ names: [String], of values: Properties, to destination: String?) {
        var signal: OpaquePointer?
        guard sd_bus_message_new_signal(bus, &signal, Self.objectPath, "org.freedesktop.DBus.Properties", "PropertiesChanged") >= 0,
            let signal
        else { return }
        defer { sd_bus_message_unref(signal) }
        if let destination { sd_bus_message_set_destination(signal, destination) }
        appendString(signal, Self.interface)
        sd_bus_message_open_container(signal, CChar(UInt8(ascii: "a")), "{sv}")
        for name in names {
            sd_bus_message_open_container(signal, CChar(UInt8(ascii: "e")), "sv")
            appendString(signal, name)
            append(property: name, of: values, to: signal)
            sd_bus_message_close_container(signal)
        }
        sd_bus_message_close_container(signal)
        sd_bus_message_open_container(signal, CChar(UInt8(ascii: "a")), "s")  // no invalidated properties
        sd_bus_message_close_container(signal)
        sd_bus_send(bus, signal, nil)
    }

    private static func check(_ operation: String, _ call: () -> Int32) throws(BusError) {
        let result = call()
        if result < 0 { throw BusError(operation: operation, code: -result) }
    }

    // MARK: Calls

    /// Answers one call to the object; 0 leaves it to sd-bus (an unknown method error).
    private func handle(_ message: OpaquePointer) -> Int32 {
        guard let interface = sd_bus_message_get_interface(message).map({ String(cString: $0) }),
            let member = sd_bus_message_get_member(message).map({ String(cString: $0) })
        else { return 0 }
        switch (interface, member) {
        case ("org.freedesktop.DBus.Introspectable", "Introspect"):
            return reply(to: message) { reply in appendString(reply, Self.introspection) }
        case ("org.freedesktop.DBus.Properties", "Get"):
            guard readString(message) == Self.interface, let name = readString(message) else { return 0 }
            guard Self.table.contains(where: { $0.name == name }) else {
                return replyError(to: message, name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no property \(name)")
            }
            let values = properties.withLock { $0 }
            return reply(to: message) { reply in append(property: name, of: values, to: reply) }
        case ("org.freedesktop.DBus.Properties", "GetAll"):
            guard readString(message) == Self.interface else { return 0 }
            let values = properties.withLock { $0 }
            return reply(to: message) { reply in
                sd_bus_message_open_container(reply, CChar(UInt8(ascii: "a")), "{sv}")
                for name in Self.table.map(\.name) {
                    sd_bus_message_open_container(reply, CChar(UInt8(ascii: "e")), "sv")
                    appendString(reply, name)
                    append(property: name, of: values, to: reply)
                    sd_bus_message_close_container(reply)
                }
                sd_bus_message_close_container(reply)
            }
        case (Self.interface, let method) where Self.methodNames.contains(method):
            guard let sender = sd_bus_message_get_sender(message).map({ String(cString: $0) }) else { return 0 }
            let claiming = method.hasPrefix("Claim")
            let sensor: ClaimBook.Sensor = method.hasSuffix("Accelerometer") ? .accelerometer : method.hasSuffix("Light") ? .light : .proximity
            let changed = claims.withLock { claiming ? $0.claim(sensor, by: sender) : $0.release(sensor, by: sender) }
            if changed { demand(sensor, claiming) }
            return reply(to: message) { _ in }
        default:
            return 0
        }
    }

    /// `NameOwnerChanged(name, old, new)`: a unique name with no new owner has left the bus.
    private func nameOwnerChanged(_ message: OpaquePointer) -> Int32 {
        guard let name = readString(message), let old = readString(message), let new = readString(message),
            name.hasPrefix(":"), name == old, new.isEmpty
        else { return 0 }
        for sensor in claims.withLock({ $0.remove(name) }) { demand(sensor, false) }
        return 0
    }

    /// A property's value on the wire.
    enum Value: Equatable {
        case boolean(Bool), string(String), double(Double)
    }

    /// Every property of the interface: its name, the sensor whose claimants are told of its
    /// changes (`nil`: everyone), and its value.
    private static let table: [(name: String, sensor: ClaimBook.Sensor?, value: @Sendable (Properties) -> Value)] = [
        ("HasAccelerometer", nil, { .boolean($0.hasAccelerometer) }),
        ("AccelerometerOrientation", .accelerometer, { .string($0.accelerometerOrientation) }),
        ("AccelerometerTilt", .accelerometer, { .string($0.accelerometerTilt) }),
        ("HasAmbientLight", nil, { .boolean($0.hasAmbientLight) }),
        ("LightLevelUnit", .light, { .string($0.lightLevelUnit) }),
        ("LightLevel", .light, { .double($0.lightLevel) }),
        ("HasProximity", nil, { .boolean($0.hasProximity) }),
        ("ProximityNear", .proximity, { .boolean($0.proximityNear) }),
    ]
    private static let methodNames: Set<String> = [
        "ClaimAccelerometer", "ReleaseAccelerometer", "ClaimLight", "ReleaseLight", "ClaimProximity", "ReleaseProximity",
    ]

    /// Sends a method return whose body `fill` appends; 1: handled.
    private func reply(to call: OpaquePointer, _ fill: (OpaquePointer) -> Void) -> Int32 {
        var reply: OpaquePointer?
        guard sd_bus_message_new_method_return(call, &reply) >= 0, let reply else { return -ENOMEM }
        defer { sd_bus_message_unref(reply) }
        fill(reply)
        return sd_bus_send(bus, reply, nil) < 0 ? -EIO : 1
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

private func appendString(_ message: OpaquePointer, _ text: String) {
    _ = text.withCString { sd_bus_message_append_basic(message, CChar(UInt8(ascii: "s")), $0) }
}

/// The next string argument of a message, if it has one.
private func readString(_ message: OpaquePointer) -> String? {
    var text: UnsafePointer<CChar>?
    guard sd_bus_message_read_basic(message, CChar(UInt8(ascii: "s")), &text) > 0, let text else { return nil }
    return String(cString: text)
}
