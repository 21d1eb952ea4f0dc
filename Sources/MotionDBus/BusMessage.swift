import CSDBus
import MotionSystem

#if canImport(Glibc)
import Glibc
#endif

/// An sd-bus call that failed: which call (and on what), and the errno it returned.
struct BusError: Error, CustomStringConvertible {
    var call: String
    var code: Int32

    var description: String {
        if call.hasPrefix("Type of message") { return call }
        if call.hasPrefix("sd_bus_request_name") && code == EEXIST {
            return "\(SensorProxyInterface.busName) is owned by another program on the bus (iio-sensor-proxy? see docs/dbus.md to switch over)"
        }
        return "sd-bus: \(call) failed (\(String(cString: strerror(code))))"
    }

    /// Whether it failed reading a message's arguments (missing, or of another type).
    var readingArguments: Bool {
        call.hasPrefix("sd_bus_message_read") || call.hasPrefix("sd_bus_message_enter") || call.hasPrefix("Type of message")
    }

    /// Runs an sd-bus call that returns a negative errno on failure; returns its non-negative result.
    @discardableResult
    static func check(_ call: @autoclosure () -> String, _ result: Int32) throws(BusError) -> Int32 {
        guard result >= 0 else { throw BusError(call: call(), code: -result) }
        return result
    }
}

/// A D-Bus message that holds one sd-bus reference and gives it back when it goes: appends and reads
/// are typed and throw the call that failed.
final class BusMessage {
    let pointer: OpaquePointer

    /// Takes over the reference that `pointer` already carries (a message sd-bus made for us).
    init(adopting pointer: OpaquePointer) {
        self.pointer = pointer
    }

    /// Takes a reference of its own on a message sd-bus lends to a handler.
    init(borrowing pointer: OpaquePointer) {
        self.pointer = sd_bus_message_ref(pointer)
    }

    deinit { sd_bus_message_unref(pointer) }

    var interface: String? { sd_bus_message_get_interface(pointer).map { String(cString: $0) } }
    var member: String? { sd_bus_message_get_member(pointer).map { String(cString: $0) } }
    /// The unique bus name of who sent it.
    var sender: String? { sd_bus_message_get_sender(pointer).map { String(cString: $0) } }

    /// Throws unless its arguments are exactly of `signature` (a method's input), said as GDBus says it.
    func expect(signature expected: String) throws(BusError) {
        let actual = sd_bus_message_get_signature(pointer, 1).map { String(cString: $0) } ?? ""
        guard actual == expected else {
            throw BusError(call: "Type of message, “(\(actual))”, does not match expected type “(\(expected))”", code: EBADMSG)
        }
    }

    /// The errno of the D-Bus error this message carries (sd-bus's mapping of its name; EIO for a
    /// name it does not know), 0 if it is no error.
    var errno: Int32 { sd_bus_message_get_errno(pointer) }

    /// The D-Bus error this message carries (a method error reply), if it is one.
    var error: (name: String, message: String)? {
        guard let error = sd_bus_message_get_error(pointer) else { return nil }
        return (error.pointee.name.map { String(cString: $0) } ?? "", error.pointee.message.map { String(cString: $0) } ?? "")
    }

    /// Sends it only to `destination` (a bus name) rather than to everyone listening.
    func setDestination(_ destination: String) throws(BusError) {
        try BusError.check("sd_bus_message_set_destination \(destination)", sd_bus_message_set_destination(pointer, destination))
    }

    // MARK: Appending

    func append(_ text: String) throws(BusError) {
        try BusError.check("sd_bus_message_append_basic s", text.withCString { sd_bus_message_append_basic(pointer, Self.code("s"), $0) })
    }

    func append(_ flag: Bool) throws(BusError) { try appendBasic("b", Int32(flag ? 1 : 0)) }  // D-Bus booleans are 32 bits
    func append(_ number: Double) throws(BusError) { try appendBasic("d", number) }
    func append(_ number: UInt32) throws(BusError) { try appendBasic("u", number) }

    private func appendBasic<Value: BitwiseCopyable>(_ type: Character, _ value: Value) throws(BusError) {
        var bits = value
        try BusError.check("sd_bus_message_append_basic \(type)", sd_bus_message_append_basic(pointer, Self.code(type), &bits))
    }

    /// Appends a container of `type` (`a`, `r`, `e`, `v`) holding `contents` (its element signature),
    /// filled by `body`.
    func append(
        container type: Character, of contents: String, _ body: (BusMessage) throws(BusError) -> Void = { _ in }
    ) throws(BusError) {
        try BusError.check("sd_bus_message_open_container \(type)\(contents)", sd_bus_message_open_container(pointer, Self.code(type), contents))
        try body(self)
        try BusError.check("sd_bus_message_close_container \(type)\(contents)", sd_bus_message_close_container(pointer))
    }

    // MARK: Reading

    /// The next argument, a string; throws `EBADMSG` when there is none or it is of another type.
    func readString() throws(BusError) -> String {
        String(cString: try readBasic("s", UnsafePointer<CChar>?.none)!)  // set whenever an argument was read
    }

    /// The next argument, a boolean; throws `EBADMSG` when there is none or it is of another type.
    func readBool() throws(BusError) -> Bool {
        try readBasic("b", Int32(0)) != 0
    }

    /// The next argument, an object path; throws `EBADMSG` when there is none or it is of another type.
    func readObjectPath() throws(BusError) -> String {
        String(cString: try readBasic("o", UnsafePointer<CChar>?.none)!)
    }

    /// The next argument, a 32-bit unsigned integer; throws `EBADMSG` when there is none or it is of another type.
    func readUInt32() throws(BusError) -> UInt32 { try readBasic("u", UInt32(0)) }

    /// The next argument, a double; throws `EBADMSG` when there is none or it is of another type.
    func readDouble() throws(BusError) -> Double { try readBasic("d", 0.0) }

    /// The next argument, a Unix descriptor (`h`), as one of our own: the message's belongs to sd-bus,
    /// which closes it with the message, so it is duplicated (`F_DUPFD_CLOEXEC`). Throws `EBADMSG` when
    /// there is none or it is of another type, and `fcntl`'s errno (EMFILE) when it cannot be duplicated.
    func readDescriptor() throws(BusError) -> OwnedDescriptor {
        let lent = try readBasic("h", Int32(-1))
        do {
            return try Syscall.duplicate(lent)
        } catch {
            throw BusError(call: "fcntl F_DUPFD_CLOEXEC of a received descriptor", code: error.rawValue)
        }
    }

    /// The next argument, a property list (`a{sv}`, as `Properties.GetAll` answers): the values that
    /// are doubles, by name; the others are skipped.
    func readDoubleProperties() throws(BusError) -> [String: Double] {
        try enter(container: "a", of: "{sv}")
        var values: [String: Double] = [:]
        while try BusError.check("sd_bus_message_enter_container e{sv}", sd_bus_message_enter_container(pointer, Self.code("e"), "sv")) > 0 {
            let name = try readString()
            // A variant of another type is refused (ENXIO) before anything is read: skipped whole.
            if sd_bus_message_enter_container(pointer, Self.code("v"), "d") > 0 {
                values[name] = try readDouble()
                try exitContainer()
            } else {
                try BusError.check("sd_bus_message_skip v", sd_bus_message_skip(pointer, "v"))
            }
            try exitContainer()
        }
        try exitContainer()
        return values
    }

    /// Leaves the container entered last.
    func exitContainer() throws(BusError) {
        try BusError.check("sd_bus_message_exit_container", sd_bus_message_exit_container(pointer))
    }

    private func readBasic<Value: BitwiseCopyable>(_ type: Character, _ initial: Value) throws(BusError) -> Value {
        var value = initial
        let read = try BusError.check("sd_bus_message_read_basic \(type)", sd_bus_message_read_basic(pointer, Self.code(type), &value))
        guard read > 0 else { throw BusError(call: "sd_bus_message_read_basic \(type) (no argument left)", code: EBADMSG) }
        return value
    }

    /// Enters the next argument, a container of `type` holding `contents`, for the reads that follow.
    func enter(container type: Character, of contents: String) throws(BusError) {
        let entered = try BusError.check(
            "sd_bus_message_enter_container \(type)\(contents)", sd_bus_message_enter_container(pointer, Self.code(type), contents))
        guard entered > 0 else { throw BusError(call: "sd_bus_message_enter_container \(type)\(contents) (no argument left)", code: EBADMSG) }
    }

    private static func code(_ type: Character) -> CChar { CChar(type.asciiValue!) }
}
