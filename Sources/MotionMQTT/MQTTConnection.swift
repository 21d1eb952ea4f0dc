import CMosquitto

/// One connection to an MQTT broker, through libmosquitto: a thin typed wrapper, one method per
/// library call. libmosquitto's own network thread connects, reconnects with backoff, writes and
/// keeps the connection alive; `publish` may be called from any thread and only queues for it.
final class MQTTConnection: @unchecked Sendable {
    // @unchecked: libmosquitto locks its own state (it is built thread-safe); `events` is immutable.

    /// A libmosquitto call that failed: which, and libmosquitto's reason.
    struct Failure: Error, CustomStringConvertible {
        var operation: String
        var code: Int32
        var description: String { "\(operation): \(String(cString: mosquitto_strerror(code)))" }
    }

    /// What the network thread reports; called on that thread.
    struct Events: Sendable {
        /// The broker answered a connection: 0 accepted, else its refusal code (`refusal(_:)`).
        var connected: @Sendable (Int32) -> Void
        /// The connection ended: 0 when we asked for it, else lost.
        var disconnected: @Sendable (Int32) -> Void
        /// A message left: written to the socket (QoS 0), or acknowledged (QoS 1 and 2).
        var published: @Sendable () -> Void
    }

    /// Seconds before the first reconnection attempt, doubling up to `maximumReconnectDelay`.
    static let reconnectDelay: UInt32 = 1
    static let maximumReconnectDelay: UInt32 = 8

    private let handle: OpaquePointer
    private let events: Events
    private var running = false

    private static let libraryReady: Void = { _ = mosquitto_lib_init() }()

    /// A connection that will identify itself as `clientID`, with a clean session.
    init(clientID: String, events: Events) throws(Failure) {
        _ = Self.libraryReady
        self.events = events
        guard let handle = mosquitto_new(clientID, true, nil) else { throw Failure(operation: "mosquitto_new", code: MOSQ_ERR_NOMEM.rawValue) }
        self.handle = handle
        mosquitto_user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
        mosquitto_connect_callback_set(handle) { _, context, code in MQTTConnection.from(context).events.connected(code) }
        mosquitto_disconnect_callback_set(handle) { _, context, code in MQTTConnection.from(context).events.disconnected(code) }
        mosquitto_publish_callback_set(handle) { _, context, _ in MQTTConnection.from(context).events.published() }
        try check("mosquitto_int_option(protocol 3.1.1)", mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311))
        // Samples are small and late ones are worth less: no Nagle delay.
        try check("mosquitto_int_option(TCP_NODELAY)", mosquitto_int_option(handle, MOSQ_OPT_TCP_NODELAY, 1))
        try check(
            "mosquitto_reconnect_delay_set",
            mosquitto_reconnect_delay_set(handle, Self.reconnectDelay, Self.maximumReconnectDelay, true))
    }

    deinit {
        mosquitto_destroy(handle)
    }

    private static func from(_ context: UnsafeMutableRawPointer?) -> MQTTConnection {
        Unmanaged<MQTTConnection>.fromOpaque(context!).takeUnretainedValue()
    }

    private func check(_ operation: String, _ code: Int32) throws(Failure) {
        guard code == MOSQ_ERR_SUCCESS.rawValue else { throw Failure(operation: operation, code: code) }
    }

    /// `mosquitto_username_pw_set`.
    func setCredentials(username: String, password: String?) throws(Failure) {
        try check("mosquitto_username_pw_set", mosquitto_username_pw_set(handle, username, password))
    }

    /// `mosquitto_tls_set`: the broker's certificate is checked against `caFile`, else the system's
    /// authorities (`/etc/ssl/certs`); a client certificate and key when given.
    func setTLS(caFile: String?, certificateFile: String?, keyFile: String?) throws(Failure) {
        try check(
            "mosquitto_tls_set", mosquitto_tls_set(handle, caFile, caFile == nil ? "/etc/ssl/certs" : nil, certificateFile, keyFile, nil))
    }

    /// `mosquitto_will_set`: what the broker publishes if the connection dies without a goodbye.
    func setWill(topic: String, payload: String, qos: Int, retain: Bool) throws(Failure) {
        let bytes = Array(payload.utf8)
        try check("mosquitto_will_set", mosquitto_will_set(handle, topic, Int32(bytes.count), bytes, Int32(qos), retain))
    }

    /// `mosquitto_connect_async` then `mosquitto_loop_start`: the network thread connects, and keeps
    /// reconnecting while the broker is away (a broker down at start is only the first such wait).
    func start(host: String, port: Int, keepalive: Int) throws(Failure) {
        let code = mosquitto_connect_async(handle, host, Int32(port), Int32(keepalive))
        // Refused or unreachable now is retried by the loop; a wrong argument is not.
        if code == MOSQ_ERR_INVAL.rawValue { throw Failure(operation: "mosquitto_connect_async(\(host):\(port))", code: code) }
        try check("mosquitto_loop_start", mosquitto_loop_start(handle))
        running = true
    }

    /// `mosquitto_publish`: queues `payload` for the network thread.
    func publish(topic: UnsafePointer<CChar>, payload: UnsafeRawBufferPointer, qos: Int, retain: Bool = false) -> Failure? {
        let code = mosquitto_publish(handle, nil, topic, Int32(payload.count), payload.baseAddress, Int32(qos), retain)
        return code == MOSQ_ERR_SUCCESS.rawValue ? nil : Failure(operation: "mosquitto_publish", code: code)
    }

    /// `mosquitto_publish` of a text.
    func publish(topic: String, text: String, qos: Int, retain: Bool) -> Failure? {
        let bytes = Array(text.utf8)
        return topic.withCString { topic in bytes.withUnsafeBytes { publish(topic: topic, payload: $0, qos: qos, retain: retain) } }
    }

    /// `mosquitto_disconnect` then `mosquitto_loop_stop`: sends what was queued, says goodbye (so the
    /// will is not published) and ends the network thread. With no connection, the thread is stopped
    /// in its wait.
    func stop(connected: Bool) {
        guard running else { return }
        running = false
        _ = mosquitto_disconnect(handle)
        _ = mosquitto_loop_stop(handle, !connected)
    }

    /// A broker's refusal of a connection, in words (`mosquitto_connack_string`).
    static func refusal(_ code: Int32) -> String { String(cString: mosquitto_connack_string(code)) }
}
