import CoreMetrics

/// What the DSU server does, as it happens, through swift-metrics (the daemon's registry when it
/// serves metrics, else nothing): the server owns its metrics; the hub does not assemble them.
struct DSUMetrics {
    private let factory: any MetricsFactory
    /// Client addresses holding a lease now.
    private let clients: Gauge
    /// Datagrams received.
    private let datagrams: Counter
    /// Pad-data packets sent, one per client per sample.
    private let packetsSent: Counter
    /// Datagrams dropped unanswered, by reason (`too_short`, `bad_crc`, `too_many_clients`…), made
    /// at a reason's first drop.
    private var dropped: [String: Counter] = [:]
    /// Packets motiond did not send, by reason: `over_budget` (more clients than a sample's send
    /// budget), `send_buffer_full` (its own socket's buffer), `send_error` (the kernel refused the
    /// destination: a firewall's `EPERM`, an unreachable network). A receiver's full buffer drops in
    /// the receiver's kernel, unseen.
    private var packetsDropped: [String: Counter] = [:]

    init(factory: any MetricsFactory) {
        self.factory = factory
        clients = Gauge(label: "motiond_dsu_clients", factory: factory)
        datagrams = Counter(label: "motiond_dsu_datagrams_received_total", factory: factory)
        packetsSent = Counter(label: "motiond_dsu_packets_sent_total", factory: factory)
        clients.record(0)
    }

    func received() { datagrams.increment() }

    func sent(_ count: Int) { if count > 0 { packetsSent.increment(by: count) } }

    func holding(_ count: Int) { clients.record(count) }

    mutating func dropped(_ reason: String) {
        counter(reason, in: &dropped, label: "motiond_dsu_datagrams_dropped_total").increment()
    }

    mutating func packetsDropped(_ count: Int, reason: String) {
        counter(reason, in: &packetsDropped, label: "motiond_dsu_packets_dropped_total").increment(by: count)
    }

    private func counter(_ reason: String, in counters: inout [String: Counter], label: String) -> Counter {
        if let counter = counters[reason] { return counter }
        let counter = Counter(label: label, dimensions: [("reason", reason)], factory: factory)
        counters[reason] = counter
        return counter
    }
}
