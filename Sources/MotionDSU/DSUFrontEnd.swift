import CoreMetrics
import MotionConfiguration
import MotionHub
import MotionSystem
import NIOCore

/// The DSU server as a part of the daemon: listens (a port taken fails the start, saying so) and
/// serves on the hub's loop; at stop, leaves the hub and closes the socket.
package final class DSUFrontEnd: DaemonPart, @unchecked Sendable {
    // @unchecked: `server` is set by `start` and read by `stop` and `localAddress`, one after the other.
    private let hub: Hub
    private let settings: DSUSettings
    private let socketPath: String
    private let metrics: any MetricsFactory
    private var server: NIOLoopBound<DSUServer>?
    private var channel: (any Channel)?

    package var name: String { "DSU server" }
    /// Where it listens, once started (the port chosen, for port 0).
    package var localAddress: SocketAddress? { channel?.localAddress }

    /// - Parameters:
    ///   - socketPath: motiond's Unix socket, whose permissions say who may use motion data
    ///     (`dsu.require_motion_group`).
    ///   - metrics: where its counters go (the daemon's metrics, or nowhere).
    package init(hub: Hub, settings: DSUSettings, socketPath: String, metrics: any MetricsFactory = NOOPMetricsHandler.instance) {
        self.hub = hub
        self.settings = settings
        self.socketPath = socketPath
        self.metrics = metrics
    }

    package func start() throws {
        let handler = DatagramHandler()
        let socket = try DSUServer.listen(settings, on: hub.eventLoop, handler: handler)
        channel = socket.channel
        server = try hub.eventLoop.submit { [hub, settings, socketPath, metrics] in
            let server = DSUServer(hub: hub, settings: settings, socket: socket, socketPath: socketPath, metrics: metrics)
            let bound = NIOLoopBound(server, eventLoop: hub.eventLoop)
            handler.server = bound
            server.start()
            return bound
        }.wait()
        let address = socket.channel.localAddress.map { "\($0)" } ?? settings.listen
        hub.logger.info("serving DSU", metadata: ["address": "\(address)", "slot": "\(settings.slot)"])
        if !socket.address.isLoopback {
            // docs/security.md, "For games": UDP sources are whatever the sender writes.
            hub.logger.warning(
                "DSU listens beyond loopback: anyone who reaches \(settings.listen) gets this machine's motion, and a 28-byte request with a forged source makes motiond send 100-byte packets to that source at the IMU's rate for 5 s (an amplifier); bind to 127.0.0.1, or let a firewall open it only to the emulating machine",
                metadata: ["address": "\(address)"])
        }
    }

    package func stop() throws {
        guard let server else { return }
        try hub.eventLoop.flatSubmit { server.value.stop() }.wait()
        self.server = nil
    }
}
