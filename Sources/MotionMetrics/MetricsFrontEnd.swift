import CoreMetrics
import MotionHub
import NIOCore
import Prometheus

/// Prometheus metrics over HTTP as a part of the daemon, served on the hub's event loop.
package final class MetricsFrontEnd: DaemonPart, @unchecked Sendable {
    // @unchecked: `server` is set by `start` and read by `stop` and `localAddress`, one after the other.
    private let hub: Hub
    private let host: String
    private let port: Int
    private var server: MetricsServer?
    private let registry = PrometheusCollectorRegistry()
    /// Where the front ends report their own metrics (served with the hub's).
    package let factory: any MetricsFactory

    package var name: String { "metrics" }
    /// Where the metrics are served, once started (the port chosen, for port 0).
    package var localAddress: SocketAddress? { server?.localAddress }

    package init(hub: Hub, host: String, port: Int) {
        (self.hub, self.host, self.port) = (hub, host, port)
        factory = PrometheusMetricsFactory(registry: registry)
    }

    package func start() throws {
        let hub = self.hub
        let metrics = NIOLoopBoundBox.makeBoxSendingValue(DaemonMetrics(registry: registry), eventLoop: hub.eventLoop)
        let server = try MetricsServer(host: host, port: port, eventLoop: hub.eventLoop, logger: hub.logger) {
            metrics.value.exposition(of: hub.metrics())
        }
        self.server = server
        hub.logger.info("serving metrics", metadata: ["address": "\(server.localAddress.map { "\($0)" } ?? "\(host):\(port)")"])
    }

    package func stop() throws {
        try server?.close()
        server = nil
    }
}
