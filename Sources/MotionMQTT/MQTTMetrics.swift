import CoreMetrics

/// What the MQTT bridge does, as it happens, through swift-metrics (the daemon's registry when it
/// serves metrics, else nothing). Its counters are safe from any thread: the broker's thread counts
/// connections and messages lost with one, the loop what it publishes.
struct MQTTMetrics: Sendable {
    /// 1 while connected to the broker, else 0.
    let connected: Gauge
    /// Connections the broker accepted.
    let connections: Counter
    /// Messages handed to the broker.
    let published: Counter
    /// Messages lost: pushed out of the full queue, refused by a connection dying under the call, or
    /// in flight (QoS 0) when a connection died.
    let dropped: Counter

    init(factory: any MetricsFactory) {
        connected = Gauge(label: "motiond_mqtt_connected", factory: factory)
        connections = Counter(label: "motiond_mqtt_connections_total", factory: factory)
        published = Counter(label: "motiond_mqtt_published_messages_total", factory: factory)
        dropped = Counter(label: "motiond_mqtt_dropped_messages_total", factory: factory)
        connected.record(0)
    }
}
