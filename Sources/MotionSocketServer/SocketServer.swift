import FoundationEssentials
import MotionHub
import MotionSystem
import MotionWire
import NIOCore
import NIOPosix

/// The Unix stream socket speaking docs/protocol.md, as a part of the daemon: each connection a
/// client of the hub (`ConnectionHandler`). The socket is systemd's where it passed one
/// (motiond.socket), else made at `socketPath` with the given mode and group, and removed at stop.
package final class SocketServer: DaemonPart, @unchecked Sendable {
    // @unchecked: `channel` and `bound` are set by `start` and read by `stop`, one after the other.
    package let socketPath: String
    private let hub: Hub
    private let group: any EventLoopGroup
    private let socketMode: mode_t
    private let socketGroup: String?
    private var channel: (any Channel)?
    /// Whether this server made the socket file (and so removes it at stop).
    private var bound = false

    package var name: String { "socket" }

    /// - Parameters:
    ///   - socketMode: the socket file's permissions (0660: owner and group may connect).
    ///   - socketGroup: the socket file's group (`nil`: the daemon's own).
    package init(hub: Hub, group: any EventLoopGroup, socketPath: String, socketMode: UInt32, socketGroup: String?) {
        self.hub = hub
        self.group = group
        self.socketPath = socketPath
        self.socketMode = mode_t(socketMode)
        self.socketGroup = socketGroup
    }

    /// The listening socket systemd passed (sd_listen_fds(3): `LISTEN_FDS`=1 for this `LISTEN_PID`,
    /// descriptor 3), if it did.
    package static func activatedSocket(environment: [String: String] = ProcessInfo.processInfo.environment) -> CInt? {
        guard environment["LISTEN_PID"].flatMap(Int32.init) == Syscall.processID(), environment["LISTEN_FDS"] == "1" else { return nil }
        return 3
    }

    /// Starts listening (a stale socket file from a crashed run is replaced).
    package func start() throws {
        let hub = self.hub
        // The hub counts the clients (`maximumClients`); the guard handles running out of descriptors.
        let acceptGuard = AcceptGuard(name: "socket", logger: hub.logger)
        let bootstrap = ServerBootstrap(group: hub.eventLoop)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(acceptGuard) }
            }
            // A client that shuts down its writing side after its requests (socat at the end of its
            // input) still gets its answers.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if acceptGuard.admit(channel) != nil {
                        let refusal = ErrorReply(id: nil, code: .unavailable, message: "motiond is out of file descriptors; try again later")
                        try channel.pipeline.syncOperations.addHandler(RefusingHandler(line: try Wire.encode(refusal)))
                    } else {
                        try channel.pipeline.syncOperations.addHandler(ConnectionHandler(hub: hub))
                    }
                }
            }
        if let inherited = Self.activatedSocket() {
            // systemd made the socket (motiond.socket): its unit sets the path, owner and mode.
            channel = try bootstrap.withBoundSocket(inherited).wait()
            hub.logger.info("using the socket systemd passed", metadata: ["descriptor": "\(inherited)"])
        } else {
            try removeStaleSocket()
            channel = try bootstrap.bind(unixDomainSocketPath: socketPath).wait()
            bound = true
            do {
                try setAccess()
            } catch {
                try? stop()
                throw error
            }
        }
        hub.logger.info("listening", metadata: ["socket": "\(socketPath)", "devices": "\(hub.devices.count)"])
    }

    /// Stops listening and removes the socket file it made (an activated socket belongs to systemd).
    package func stop() throws {
        try channel?.close().wait()
        channel = nil
        if bound { _ = Syscall.remove(socketPath) }
        bound = false
    }

    /// Removes a socket file that a run which did not stop cleanly left behind. Anything else at the
    /// path is refused: a file that is not a socket, or a socket a live daemon answers on (a second
    /// instance used to unlink it, leaving the first unreachable).
    private func removeStaleSocket() throws {
        guard let kind = try? Syscall.kind(at: socketPath).get() else { return }  // nothing there
        guard kind == .socket else {
            throw AccessError(message: "\(socketPath) exists and is not a socket: not replacing it (remove it, or choose another --socket)")
        }
        // Whether a daemon accepts connections there (a stale file refuses them).
        if let live = try? ClientBootstrap(group: group).connect(unixDomainSocketPath: socketPath).wait() {
            live.close(promise: nil)
            throw AccessError(message: "another motiond answers on \(socketPath): not taking its socket")
        }
        _ = Syscall.remove(socketPath)
    }

    /// Who may connect is decided by the socket file's mode and group.
    private func setAccess() throws {
        if case .failure(let error) = Syscall.setMode(socketMode, of: socketPath) {
            throw AccessError(message: "chmod \(String(socketMode, radix: 8)) \(socketPath): \(error)")
        }
        guard let socketGroup else { return }
        guard let group = Syscall.groupID(named: socketGroup) else { throw AccessError(message: "no group \"\(socketGroup)\"") }
        if case .failure(let error) = Syscall.setGroup(group, of: socketPath) {
            throw AccessError(message: "chown :\(socketGroup) \(socketPath): \(error)")
        }
    }

    /// The socket's access could not be set up.
    package struct AccessError: Error, CustomStringConvertible {
        package var message: String
        package var description: String { message }
    }
}
