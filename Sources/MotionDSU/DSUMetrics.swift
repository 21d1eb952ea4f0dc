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
    /// Datagrams dropped unanswered, by reason (`too_short`, `bad_crc`, `too_many_clients`…).
    private var dropped: [DSURequest.Problem: Counter] = [:]
    /// Why motiond did not send a packet. A receiver's full buffer drops in the receiver's kernel, unseen.
    enum PacketDrop {
        /// More clients than a sample's send budget.
        case overBudget
        /// Its own socket's buffer was full.
        case sendBufferFull
        /// The kernel refused the destination: a firewall's `EPERM`, an unreachable network.
        case sendError

        /// The metric's `reason`.
        var label: String {
            switch self {
            case .overBudget: "over_budget"
            case .sendBufferFull: "send_buffer_full"
            case .sendError: "send_error"
            }
        }
    }
    /// Packets not sent, by reason: keyed by the case, not its label (no string hashed), as over
    /// budget it is counted with every sample.
    private var packetsDropped: [PacketDrop: Counter] = [:]

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

    mutating func dropped(_ problem: DSURequest.Problem) {
        counter(problem, reason: problem.rawValue, in: &dropped, label: "motiond_dsu_datagrams_dropped_total").increment()
    }

    mutating func packetsDropped(_ count: Int, reason: PacketDrop) {
        counter(reason, reason: reason.label, in: &packetsDropped, label: "motiond_dsu_packets_dropped_total").increment(by: count)
    }

    /// The counter of `key` in `counters`, made at its first use (a reason never seen has no series).
    private func counter<Key>(_ key: Key, reason: String, in counters: inout [Key: Counter], label: String) -> Counter {
        if let counter = counters[key] { return counter }
        let counter = Counter(label: label, dimensions: [("reason", reason)], factory: factory)
        counters[key] = counter
        return counter
    }
}
