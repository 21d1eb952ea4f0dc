import CoreMetrics
import MotionConfiguration
import MotionHub
import MotionSystem

/// The MQTT bridge as a part of the daemon: connects to the broker (in the background: one away is
/// retried) and publishes the configured streams; at stop, says `offline` and leaves.
package final class MQTTFrontEnd: DaemonPart, @unchecked Sendable {
    // @unchecked: `bridge` is set by `start` and read by `stop`, one after the other.
    private let hub: Hub
    private let settings: MQTTSettings
    private let metrics: any MetricsFactory
    private var bridge: MQTTBridge?

    package var name: String { "MQTT bridge" }

    /// A bridge for `settings`, its metrics going to `metrics` (the daemon's, or nowhere).
    package init(hub: Hub, settings: MQTTSettings, metrics: any MetricsFactory = NOOPMetricsHandler.instance) {
        self.hub = hub
        self.settings = settings
        self.metrics = metrics
    }

    package func start() throws {
        let hostName = (try? Syscall.hostName().get()) ?? "localhost"
        bridge = try hub.eventLoop.submit { [hub, settings, metrics] in
            let bridge = MQTTBridge(hub: hub, settings: settings, hostName: hostName, metrics: metrics)
            try bridge.start(hostName: hostName)
            return bridge
        }.wait()
    }

    package func stop() throws {
        guard let bridge else { return }
        try hub.eventLoop.submit { bridge.detach() }.wait()
        bridge.stop()
        self.bridge = nil
    }
}
