import MotionConfiguration
import MotionHub
import MotionSystem

/// The MQTT bridge as a part of the daemon: connects to the broker (in the background: one away is
/// retried) and publishes the configured streams; at stop, says `offline` and leaves.
package final class MQTTFrontEnd: DaemonPart, @unchecked Sendable {
    // @unchecked: `bridge` is set by `start` and read by `stop`, one after the other.
    private let hub: Hub
    private let settings: MQTTSettings
    private var bridge: MQTTBridge?

    package var name: String { "MQTT bridge" }

    package init(hub: Hub, settings: MQTTSettings) {
        self.hub = hub
        self.settings = settings
    }

    package func start() throws {
        let hub = self.hub
        let settings = self.settings
        let hostName = (try? Syscall.hostName().get()) ?? "localhost"
        bridge = try hub.eventLoop.submit {
            let bridge = MQTTBridge(hub: hub, settings: settings, hostName: hostName)
            try bridge.start(hostName: hostName)
            hub.bridgeCounters = { bridge.counters }
            return bridge
        }.wait()
    }

    package func stop() throws {
        guard let bridge else { return }
        try hub.eventLoop.submit { [hub] in
            hub.bridgeCounters = nil
            bridge.detach()
        }.wait()
        bridge.stop()
        self.bridge = nil
    }
}
