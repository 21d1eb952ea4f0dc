import CMosquitto
import MotionSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One connection to an MQTT broker, through libmosquitto: a thin typed wrapper, one method per
/// library call, and the network thread that drives it.
///
/// The thread is ours, not `mosquitto_loop_start`'s: libmosquitto's own loop (`loop_forever`) returns
/// for good on errors it deems fatal, a protocol error among them, so one garbage packet from a broker
/// would end the bridge. Ours treats every error alike: the connection is closed, and after a backoff
/// of `reconnectDelay` doubling up to `maximumReconnectDelay` it connects again, until `stop`. It polls
/// the socket itself (libmosquitto's `select` refuses descriptors above 1,023); `publish` may be
/// called from any thread and only queues for it.
final class MQTTConnection: @unchecked Sendable {
    // @unchecked: libmosquitto locks its own state (the handle is marked threaded); `events` and the
    // thread are immutable; `failures` is only the network thread's.

    /// A libmosquitto call that failed: which, and libmosquitto's reason (or `reason`, where the
    /// library itself could not be loaded).
    struct Failure: Error, CustomStringConvertible {
        var operation: String
        var code: Int32
        var reason: String?
        var description: String { "\(operation): \(reason ?? String(cString: motiond_mosquitto_strerror(code)))" }
    }

    /// What the network thread reports; called on that thread.
    struct Events: Sendable {
        /// The broker answered a connection: 0 accepted, else its refusal code (`refusal(_:)`).
        var connected: @Sendable (Int32) -> Void
        /// The connection ended: 0 when we asked for it, else lost.
        var disconnected: @Sendable (Int32) -> Void
        /// A message left: written to the socket (QoS 0), or acknowledged (QoS 1 and 2).
        var published: @Sendable () -> Void
        /// The broker sent more than it owes (`received` bytes on this connection, `allowed` owed),
        /// and the connection was cut.
        var overran: @Sendable (_ received: UInt64, _ allowed: UInt64) -> Void
    }

    /// What a broker may send a client that subscribes to nothing: a CONNACK, an acknowledgement or
    /// two per message (4 bytes each in MQTT 3.1.1), a PINGRESP per keepalive, each perhaps in a TLS
    /// record of its own (29 bytes more), after a TLS handshake (a certificate chain: kilobytes).
    /// libmosquitto allocates whatever length a packet announces and reads it whole (its client has
    /// no limit: "FIXME - client case for incoming message received from broker too large" in
    /// lib/packet_mosq.c), so a broker could make it hold 256 MB; a connection that brings more than
    /// this is cut, and what libmosquitto had read is freed at the reconnection. The check runs
    /// between libmosquitto's reads, and one read takes all that keeps arriving: a broker that
    /// streams faster than the daemon reads still brings in some tens of megabytes before the cut
    /// (docs/fleet.md says how to bound it hard).
    struct Allowance {
        /// Bytes for the handshake and the CONNACK.
        static let base: UInt64 = 64 << 10
        /// Bytes per message handed to libmosquitto: two acknowledgements in TLS records.
        static let perMessage: UInt64 = 64
        /// Bytes per second connected: pings.
        static let perSecond: UInt64 = 4

        static func bytes(messages: Int, seconds: Double) -> UInt64 {
            base + perMessage * UInt64(max(0, messages)) + perSecond * UInt64(max(0, seconds))
        }
    }

    /// Seconds before the first reconnection attempt, doubling up to `maximumReconnectDelay`.
    static let reconnectDelay: Duration = .seconds(1)
    static let maximumReconnectDelay: Duration = .seconds(8)
    /// How long `stop` lets the goodbye (the retained status, then DISCONNECT) be written.
    static let goodbyeTimeout: Duration = .seconds(2)

    private let handle: OpaquePointer
    private let events: Events
    private let thread: WakeableThread
    /// Connection attempts that failed since the last accepted one: the backoff's exponent.
    private var failures = 0
    /// Messages handed to libmosquitto so far (by the loop's thread).
    private let messagesQueued = Atomic<Int>(0)
    private var started = false

    /// libmosquitto loaded (only now: a daemon without MQTT never maps it, nor libssl and libcrypto)
    /// and initialised, once; or what kept it from loading.
    private static let libraryProblem: String? = {
        if let problem = motiond_mosquitto_load() { return String(cString: problem) }
        _ = motiond_mosquitto_lib_init()
        return nil
    }()

    /// A connection that will identify itself as `clientID`, with a clean session.
    init(clientID: String, events: Events) throws(Failure) {
        if let problem = Self.libraryProblem {
            throw Failure(operation: "loading libmosquitto.so.1 (MQTT needs the libmosquitto1 package)", code: MOSQ_ERR_NOT_SUPPORTED.rawValue, reason: problem)
        }
        self.events = events
        do {
            thread = try WakeableThread(name: "mqtt")
        } catch {
            throw Failure(operation: "eventfd (the MQTT thread's wake-up)", code: MOSQ_ERR_ERRNO.rawValue)
        }
        guard let handle = motiond_mosquitto_new(clientID, true, nil) else {
            throw Failure(operation: "mosquitto_new", code: MOSQ_ERR_NOMEM.rawValue)
        }
        self.handle = handle
        motiond_mosquitto_user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
        motiond_mosquitto_connect_callback_set(handle) { _, context, code in
            let connection = MQTTConnection.from(context)
            if code == 0 { connection.failures = 0 }
            connection.events.connected(code)
        }
        motiond_mosquitto_disconnect_callback_set(handle) { _, context, code in MQTTConnection.from(context).events.disconnected(code) }
        motiond_mosquitto_publish_callback_set(handle) { _, context, _ in MQTTConnection.from(context).events.published() }
        try check("motiond_mosquitto_int_option(protocol 3.1.1)", motiond_mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311))
        // Samples are small and late ones are worth less: no Nagle delay.
        try check("motiond_mosquitto_int_option(TCP_NODELAY)", motiond_mosquitto_int_option(handle, MOSQ_OPT_TCP_NODELAY, 1))
        // Packets queued from other threads wait for ours rather than being written by the caller.
        try check("mosquitto_threaded_set", motiond_mosquitto_threaded_set(handle, true))
    }

    deinit {
        motiond_mosquitto_destroy(handle)
    }

    private static func from(_ context: UnsafeMutableRawPointer?) -> MQTTConnection {
        Unmanaged<MQTTConnection>.fromOpaque(context!).takeUnretainedValue()
    }

    private func check(_ operation: String, _ code: Int32) throws(Failure) {
        guard code == MOSQ_ERR_SUCCESS.rawValue else { throw Failure(operation: operation, code: code) }
    }

    /// `mosquitto_username_pw_set`.
    func setCredentials(username: String, password: String?) throws(Failure) {
        try check("mosquitto_username_pw_set", motiond_mosquitto_username_pw_set(handle, username, password))
    }

    /// `mosquitto_tls_set`: the broker's certificate is checked against `caFile`, else the system's
    /// authorities (`/etc/ssl/certs`); a client certificate and key when given.
    func setTLS(caFile: String?, certificateFile: String?, keyFile: String?) throws(Failure) {
        try check(
            "mosquitto_tls_set", motiond_mosquitto_tls_set(handle, caFile, caFile == nil ? "/etc/ssl/certs" : nil, certificateFile, keyFile, nil))
    }

    /// `mosquitto_will_set`: what the broker publishes if the connection dies without a goodbye.
    func setWill(topic: String, payload: String, qos: Int, retain: Bool) throws(Failure) {
        let bytes = Array(payload.utf8)
        try check("mosquitto_will_set", motiond_mosquitto_will_set(handle, topic, Int32(bytes.count), bytes, Int32(qos), retain))
    }

    /// `mosquitto_connect_async`, then the network thread, which goes on connecting while the broker is
    /// away (a broker down at start is only the first such wait).
    func start(host: String, port: Int, keepalive: Int) throws(Failure) {
        let code = motiond_mosquitto_connect_async(handle, host, Int32(port), Int32(keepalive))
        // Refused or unreachable now is retried by the thread; a wrong argument is not.
        if code == MOSQ_ERR_INVAL.rawValue { throw Failure(operation: "motiond_mosquitto_connect_async(\(host):\(port))", code: code) }
        if let error = thread.start({ [self] in serve() }) {
            throw Failure(operation: "pthread_create (the MQTT thread): \(error)", code: MOSQ_ERR_ERRNO.rawValue)
        }
        started = true
    }

    /// `mosquitto_publish`: queues `payload` for the network thread, which writes it once woken
    /// (`wakeNetworkThread`, once for all the messages queued together).
    func publish(topic: UnsafePointer<CChar>, payload: UnsafeRawBufferPointer, qos: Int, retain: Bool = false) -> Failure? {
        let code = motiond_mosquitto_publish(handle, nil, topic, Int32(payload.count), payload.baseAddress, Int32(qos), retain)
        guard code == MOSQ_ERR_SUCCESS.rawValue else { return Failure(operation: "mosquitto_publish", code: code) }
        messagesQueued.add(1, ordering: .relaxed)
        return nil
    }

    /// `mosquitto_publish` of a text, and wakes the network thread.
    func publish(topic: String, text: String, qos: Int, retain: Bool) -> Failure? {
        let bytes = Array(text.utf8)
        defer { wakeNetworkThread() }
        return topic.withCString { topic in bytes.withUnsafeBytes { publish(topic: topic, payload: $0, qos: qos, retain: retain) } }
    }

    /// Has the network thread write what was queued.
    func wakeNetworkThread() { thread.wake() }

    /// `mosquitto_disconnect`, then ends the network thread: what was queued is written first (so a
    /// status published just before goes out, and the will does not), for at most `goodbyeTimeout`.
    /// With no connection, the thread leaves its wait at once.
    func stop() {
        guard started else { return }
        started = false
        // DISCONNECT queued first: a thread that sees the stop finds it still to write.
        _ = motiond_mosquitto_disconnect(handle)
        thread.stop()
    }

    // MARK: The network thread

    /// Drives the connection until `stop`: reads, writes and keeps alive while it is up; waits its
    /// backoff and connects again whenever it is down, whatever brought it down.
    private func serve() {
        var goodbyeDeadline: ContinuousClock.Instant?
        /// The connection being watched for overrun: its socket, since when, and the messages queued before it.
        var watched: (socket: Int32, since: ContinuousClock.Instant, messagesBefore: Int)?
        while true {
            if thread.isStopping {
                goodbyeDeadline = goodbyeDeadline ?? .now + Self.goodbyeTimeout
                guard motiond_mosquitto_socket(handle) >= 0, motiond_mosquitto_want_write(handle), .now < goodbyeDeadline! else { return }
            }
            let socket = motiond_mosquitto_socket(handle)
            guard socket >= 0 else {
                guard !thread.isStopping, waitBeforeReconnecting() else { return }
                watched = nil
                _ = motiond_mosquitto_reconnect_async(handle)
                continue
            }
            if watched?.socket != socket { watched = (socket, .now, messagesQueued.load(ordering: .relaxed)) }
            let events = Int16(POLLIN) | (motiond_mosquitto_want_write(handle) ? Int16(POLLOUT) : 0)
            guard case .success(let wakeup) = thread.wait(for: events, on: socket, timeoutMilliseconds: 1000) else { continue }
            // An error closes the socket and calls `disconnected` (libmosquitto's own handling); the
            // next turn finds no socket and reconnects.
            if wakeup.readable {
                guard motiond_mosquitto_loop_read(handle, 1) == MOSQ_ERR_SUCCESS.rawValue else { continue }
                if let watched, let received = Syscall.bytesReceived(onTCPSocket: socket) {
                    let allowed = Allowance.bytes(
                        messages: messagesQueued.load(ordering: .relaxed) - watched.messagesBefore,
                        seconds: Double(watched.since.duration(to: .now).components.seconds))
                    if received > allowed {
                        // libmosquitto's next read finds the end and closes it; the turn after reconnects.
                        Syscall.shutDown(socket)
                        self.events.overran(received, allowed)
                    }
                }
            }
            if motiond_mosquitto_socket(handle) >= 0, motiond_mosquitto_want_write(handle), motiond_mosquitto_loop_write(handle, 1) != MOSQ_ERR_SUCCESS.rawValue {
                continue
            }
            _ = motiond_mosquitto_loop_misc(handle)  // keepalive: a ping, or closing a connection that stopped answering
        }
    }

    /// Waits `reconnectDelay` × 2^failures (at most `maximumReconnectDelay`); false when `stop` ended the wait.
    private func waitBeforeReconnecting() -> Bool {
        let delay = min(Self.reconnectDelay * (1 << min(failures, 16)), Self.maximumReconnectDelay)
        failures += 1
        let deadline = ContinuousClock.now + delay
        while !thread.isStopping {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return true }
            _ = thread.wait(timeoutMilliseconds: Int32(left / .milliseconds(1)) + 1)
        }
        return false
    }

    /// A broker's refusal of a connection, in words (`mosquitto_connack_string`).
    static func refusal(_ code: Int32) -> String { String(cString: motiond_mosquitto_connack_string(code)) }
}
