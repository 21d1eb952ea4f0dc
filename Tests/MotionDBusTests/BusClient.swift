import CSDBus
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A D-Bus client of the tests' own, on sd-bus: one connection for several calls, as a desktop
/// program holds one (gdbus makes a new connection, a new sender, per call).
final class BusClient {
    private let bus: OpaquePointer
    static let destination = "net.hadess.SensorProxy"

    struct CallError: Error, CustomStringConvertible {
        var name: String
        var message: String
        var description: String { "\(name): \(message)" }
    }

    init(address: String) throws {
        var connection: OpaquePointer?
        guard sd_bus_new(&connection) >= 0, let connection else { throw CallError(name: "sd_bus_new", message: "failed") }
        bus = connection
        sd_bus_set_address(bus, address)
        sd_bus_set_bus_client(bus, 1)
        let started = sd_bus_start(bus)
        guard started >= 0 else { throw CallError(name: "sd_bus_start", message: String(cString: strerror(-started))) }
    }

    deinit { sd_bus_flush_close_unref(bus) }

    /// The connection's unique bus name (`:1.7`): the sender of its calls, the destination of the
    /// signals sent to it.
    var uniqueName: String {
        var name: UnsafePointer<CChar>?
        sd_bus_get_unique_name(bus, &name)
        return name.map { String(cString: $0) } ?? ""
    }

    /// Calls a method without arguments; throws the D-Bus error it returns.
    func call(_ method: String, path: String = "/net/hadess/SensorProxy", interface: String = "net.hadess.SensorProxy", timeout: Double = 10) throws {
        _ = try send(method, path: path, interface: interface, arguments: [], timeout: timeout)
    }

    /// A property's value, as text (`true`, `left-up`, `312.5`).
    func property(_ name: String, path: String = "/net/hadess/SensorProxy", interface: String = "net.hadess.SensorProxy") throws -> String {
        let reply = try send("Get", path: path, interface: "org.freedesktop.DBus.Properties", arguments: [interface, name], timeout: 10)
        defer { sd_bus_message_unref(reply) }
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        sd_bus_message_peek_type(reply, &type, &contents)
        let signature = contents.map { String(cString: $0) } ?? ""
        sd_bus_message_enter_container(reply, CChar(UInt8(ascii: "v")), contents)
        switch signature {
        case "b":
            var flag: Int32 = 0
            sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "b")), &flag)
            return flag != 0 ? "true" : "false"
        case "d":
            var number = 0.0
            sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "d")), &number)
            return "\(number)"
        default:
            var text: UnsafePointer<CChar>?
            sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "s")), &text)
            return text.map { String(cString: $0) } ?? ""
        }
    }

    private func send(_ method: String, path: String, interface: String, arguments: [String], timeout: Double) throws -> OpaquePointer {
        var call: OpaquePointer?
        sd_bus_message_new_method_call(bus, &call, Self.destination, path, interface, method)
        defer { sd_bus_message_unref(call) }
        for argument in arguments { _ = argument.withCString { sd_bus_message_append_basic(call, CChar(UInt8(ascii: "s")), $0) } }
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        guard sd_bus_call(bus, call, UInt64(timeout * 1e6), &error, &reply) >= 0, let reply else {
            throw CallError(name: error.name.map { String(cString: $0) } ?? "no reply", message: error.message.map { String(cString: $0) } ?? "")
        }
        return reply
    }
}
