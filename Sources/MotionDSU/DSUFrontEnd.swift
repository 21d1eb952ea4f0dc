import MotionConfiguration
import MotionHub
import NIOCore

/// The DSU server as a part of the daemon: listens (a port taken fails the start, saying so) and
/// serves on the hub's loop; at stop, leaves the hub and closes the socket.
package final class DSUFrontEnd: DaemonPart, @unchecked Sendable {
    // @unchecked: `server` is set by `start` and read by `stop` and `localAddress`, one after the other.
    private let hub: Hub
    private let settings: DSUSettings
    private var server: NIOLoopBound<DSUServer>?
    private var channel: (any Channel)?

    package var name: String { "DSU server" }
    /// Where it listens, once started (the port chosen, for port 0).
    package var localAddress: SocketAddress? { channel?.localAddress }

    package init(hub: Hub, settings: DSUSettings) {
        self.hub = hub
        self.settings = settings
    }

    package func start() throws {
        let hub = self.hub
        let settings = self.settings
        let handler = DatagramHandler()
        let channel = try DSUServer.listen(settings, on: hub.eventLoop, handler: handler)
        self.channel = channel
        server = try hub.eventLoop.submit {
            let server = DSUServer(hub: hub, settings: settings, channel: channel)
            let bound = NIOLoopBound(server, eventLoop: hub.eventLoop)
            handler.server = bound
            server.start()
            hub.dsuCounters = { server.counters }
            return bound
        }.wait()
        hub.logger.info("serving DSU", metadata: ["address": "\(channel.localAddress.map { "\($0)" } ?? settings.listen)", "slot": "\(settings.slot)"])
    }

    package func stop() throws {
        guard let server else { return }
        try hub.eventLoop.flatSubmit { [hub] in
            hub.dsuCounters = nil
            return server.value.stop()
        }.wait()
        self.server = nil
    }
}
