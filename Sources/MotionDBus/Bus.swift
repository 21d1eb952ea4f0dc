import CSDBus
import MotionSystem

#if canImport(Glibc)
import Glibc
#endif

/// A connection to a D-Bus bus through sd-bus, closed when it goes (`flush` first sends what is
/// queued, bounded). sd-bus is not to be used from two threads: one thread owns it (the service's bus
/// thread). Nothing here waits for the bus: a bus that accepts the connection and never answers holds
/// no caller (issue 60, defect 9); every call is sent asynchronously, its answer comes from `process`.
final class Bus {
    /// How long a method call waits for its answer before sd-bus answers it with a timeout error, µs
    /// (sd-bus's default is 25 s): the bus driver, polkit and GeoClue answer in milliseconds, and
    /// GeoClue's bus activation in a second or two. Not for the setup calls (`subscribe`,
    /// `requestName`), which wait for their answer as long as it takes.
    static let methodCallTimeout: UInt64 = 10_000_000

    private let pointer: OpaquePointer
    /// The handlers sd-bus calls for served objects and matched signals: kept as long as the bus.
    private var handlers: [Handler] = []

    /// Connects to the bus at `address` (a D-Bus address such as `unix:path=…`), or to the system bus,
    /// without waiting: the socket's `connect` does not block, and authentication and `Hello` go on
    /// in `process`.
    init(address: String?) throws(BusError) {
        var connection: OpaquePointer?
        do {
            if let address {
                try BusError.check("sd_bus_new", sd_bus_new(&connection))
                try BusError.check("sd_bus_set_address \(address)", sd_bus_set_address(connection, address))
                try BusError.check("sd_bus_set_bus_client", sd_bus_set_bus_client(connection, 1))
                try BusError.check("sd_bus_start \(address)", sd_bus_start(connection))
            } else {
                try BusError.check("sd_bus_open_system", sd_bus_open_system(&connection))
            }
            try BusError.check("sd_bus_set_method_call_timeout", sd_bus_set_method_call_timeout(connection, Self.methodCallTimeout))
        } catch {
            sd_bus_unref(connection)
            throw error
        }
        pointer = connection!
    }

    /// Closed without `sd_bus_flush`, which waits for a bus that is still authenticating (up to
    /// sd-bus's 90 s) and for one that does not read: what matters is sent by `flush` before.
    deinit { sd_bus_close_unref(pointer) }

    /// A handler's closures, handed to sd-bus as its userdata: `handle` for the messages, `answered`
    /// for the reply to the call that set it up (a match's `AddMatch`, `RequestName`).
    private final class Handler {
        let handle: (BusMessage) -> Int32
        let answered: (BusMessage) -> Void
        init(_ handle: @escaping (BusMessage) -> Int32, answered: @escaping (BusMessage) -> Void = { _ in }) {
            (self.handle, self.answered) = (handle, answered)
        }
    }

    private static let trampoline: sd_bus_message_handler_t = { message, userdata, _ in
        Unmanaged<Handler>.fromOpaque(userdata!).takeUnretainedValue().handle(BusMessage(borrowing: message!))
    }

    private static let answerTrampoline: sd_bus_message_handler_t = { message, userdata, _ in
        Unmanaged<Handler>.fromOpaque(userdata!).takeUnretainedValue().answered(BusMessage(borrowing: message!))
        return 1
    }

    /// Serves the object at `path`: every call to it goes to `handler`, which returns whether it
    /// answered (`false`: sd-bus answers that there is no such method); an error it throws is the
    /// call's error reply (`InvalidArgs` when an argument could not be read, else `Failed`).
    func serve(path: String, _ handler: @escaping (BusMessage) throws(BusError) -> Bool) throws(BusError) {
        let box = Handler { [unowned self] message -> Int32 in
            do throws(BusError) { return try handler(message) ? 1 : 0 } catch {
                // A call whose arguments cannot be read is the caller's mistake; anything else ours.
                let name = error.readingArguments ? "org.freedesktop.DBus.Error.InvalidArgs" : "org.freedesktop.DBus.Error.Failed"
                do throws(BusError) { try replyError(to: message, name: name, message: "\(error)") } catch { return -error.code }
                return 1
            }
        }
        try BusError.check("sd_bus_add_object \(path)", sd_bus_add_object(pointer, nil, path, Self.trampoline, Unmanaged.passUnretained(box).toOpaque()))
        handlers.append(box)
    }

    /// Calls `handler` with every message that matches `rule` (a D-Bus match rule), once the bus has
    /// installed it; `failed` gets the bus's refusal (the rule is then never matched).
    func subscribe(_ rule: String, failed: @escaping (BusError) -> Void, _ handler: @escaping (BusMessage) -> Void) throws(BusError) {
        let box = Handler(
            { message in
                handler(message)
                return 0
            },
            answered: { reply in
                if reply.error != nil { failed(BusError(call: "AddMatch \(rule)", code: reply.errno)) }
            })
        try BusError.check(
            "sd_bus_add_match_async \(rule)",
            withoutTimeout { sd_bus_add_match_async(pointer, nil, rule, Self.trampoline, Self.answerTrampoline, Unmanaged.passUnretained(box).toOpaque()) })
        handlers.append(box)
    }

    /// Asks for the well-known `name`; `answer` gets nil once it is this connection's, or the error:
    /// `EEXIST` when another connection owns it (as `sd_bus_request_name` says it).
    func requestName(_ name: String, answer: @escaping (BusError?) -> Void) throws(BusError) {
        let call = "sd_bus_request_name \(name)"
        let box = Handler({ _ in 0 }) { reply in
            guard reply.error == nil else { return answer(BusError(call: call, code: reply.errno)) }
            // RequestName's answer (D-Bus specification): 1 primary owner, 2 queued (not asked for), 3 exists, 4 already owner.
            switch try? reply.readUInt32() {
            case 1, 4: answer(nil)
            case 3: answer(BusError(call: call, code: EEXIST))
            default: answer(BusError(call: call, code: EBADMSG))
            }
        }
        try BusError.check(
            call, withoutTimeout { sd_bus_request_name_async(pointer, nil, name, 0, Self.answerTrampoline, Unmanaged.passUnretained(box).toOpaque()) })
        handlers.append(box)
    }

    /// Runs `send`, which queues a setup call (`AddMatch`, `RequestName`), with no timeout for its
    /// answer: a bus that answers late (slow at boot, busy) must still install the match and give the
    /// name, not leave the service without them for good after a local timeout (sd-bus's
    /// `sd_bus_call_async` waits forever for `UINT64_MAX`, and takes the bus's method-call timeout for
    /// the calls of `sd_bus_add_match_async` and `sd_bus_request_name_async`, which have no argument for it).
    private func withoutTimeout(_ send: () -> Int32) -> Int32 {
        sd_bus_set_method_call_timeout(pointer, .max)
        defer { sd_bus_set_method_call_timeout(pointer, Self.methodCallTimeout) }
        return send()
    }

    // MARK: Messages

    func newSignal(path: String, interface: String, member: String) throws(BusError) -> BusMessage {
        var message: OpaquePointer?
        try BusError.check("sd_bus_message_new_signal \(interface).\(member)", sd_bus_message_new_signal(pointer, &message, path, interface, member))
        return BusMessage(adopting: message!)
    }

    func newMethodCall(destination: String, path: String, interface: String, member: String) throws(BusError) -> BusMessage {
        var message: OpaquePointer?
        try BusError.check(
            "sd_bus_message_new_method_call \(interface).\(member)",
            sd_bus_message_new_method_call(pointer, &message, destination, path, interface, member))
        return BusMessage(adopting: message!)
    }

    /// A method return to `call`, to fill and `send`.
    func newReply(to call: BusMessage) throws(BusError) -> BusMessage {
        var message: OpaquePointer?
        try BusError.check("sd_bus_message_new_method_return", sd_bus_message_new_method_return(call.pointer, &message))
        return BusMessage(adopting: message!)
    }

    func send(_ message: BusMessage) throws(BusError) {
        try BusError.check("sd_bus_send", sd_bus_send(pointer, message.pointer, nil))
    }

    /// Answers `call` with the error `name` (a D-Bus error name) saying `message`.
    func replyError(to call: BusMessage, name: String, message: String) throws(BusError) {
        let result = name.withCString { name in
            message.withCString { text in
                var error = sd_bus_error(name: name, message: text, _need_free: 0)
                return sd_bus_reply_method_error(call.pointer, &error)
            }
        }
        try BusError.check("sd_bus_reply_method_error \(name)", result)
    }

    /// Sends the method call `message` and returns; `answer` gets its reply (or the bus's error reply,
    /// a timeout included) from `process`. If the bus closes first, `answer` is never called.
    func call(_ message: BusMessage, answer: @escaping (BusMessage) -> Void) throws(BusError) {
        let box = Unmanaged.passRetained(Handler { reply in
            answer(reply)
            return 1
        })
        var slot: OpaquePointer?
        let sent = sd_bus_call_async(pointer, &slot, message.pointer, Self.trampoline, box.toOpaque(), 0)
        guard sent >= 0, let slot else {
            box.release()
            throw BusError(call: "sd_bus_call_async", code: sent < 0 ? -sent : EINVAL)
        }
        // The answer is released with the slot: after the reply, or when the bus is freed before one.
        let destroyed = sd_bus_slot_set_destroy_callback(slot) { userdata in Unmanaged<Handler>.fromOpaque(userdata!).release() }
        guard destroyed >= 0 else {
            sd_bus_slot_unref(slot)  // cancels the call: the answer is never called
            box.release()
            throw BusError(call: "sd_bus_slot_set_destroy_callback", code: -destroyed)
        }
        // The slot is the bus's from here (floating), so dropping our reference keeps the call.
        let floated = sd_bus_slot_set_floating(slot, 1)
        sd_bus_slot_unref(slot)
        try BusError.check("sd_bus_slot_set_floating", floated)
    }

    // MARK: Running

    /// Handles what has arrived: dispatches calls, replies and signals, until nothing is left.
    func process() throws(BusError) {
        while try BusError.check("sd_bus_process", sd_bus_process(pointer, nil)) > 0 {}
    }

    /// Sends what is queued, on `thread` (the bus's own, stopping), for at most `milliseconds`: a bus
    /// that has not taken it by then (hung, or not yet past authentication) is left, never waited for.
    func flush(on thread: WakeableThread, milliseconds: Int64) {
        let deadline = Syscall.monotonicNanoseconds() + milliseconds * 1_000_000
        while true {
            guard (try? process()) != nil, let waiting = try? waitingFor() else { return }
            // Running, with nothing left to write: sent.
            if sd_bus_is_ready(pointer) > 0 && waiting.events & Int16(POLLOUT) == 0 { return }
            let left = deadline - Syscall.monotonicNanoseconds()
            guard left > 0 else { return }
            guard case .success = thread.wait(for: waiting.events, on: waiting.descriptor, timeoutMilliseconds: Int32(clamping: left / 1_000_000 + 1))
            else { return }
        }
    }

    /// What to wait for: the bus's descriptor, the `poll` events it needs, and sd-bus's next deadline
    /// (a method call's timeout) on the monotonic clock, ns, if it has one.
    func waitingFor() throws(BusError) -> (descriptor: Int32, events: Int16, deadline: Int64?) {
        let descriptor = try BusError.check("sd_bus_get_fd", sd_bus_get_fd(pointer))
        let events = try BusError.check("sd_bus_get_events", sd_bus_get_events(pointer))
        var microseconds: UInt64 = 0
        let hasDeadline = try BusError.check("sd_bus_get_timeout", sd_bus_get_timeout(pointer, &microseconds)) > 0 && microseconds != .max
        return (descriptor, Int16(events), hasDeadline ? Int64(clamping: microseconds) * 1000 : nil)
    }
}
