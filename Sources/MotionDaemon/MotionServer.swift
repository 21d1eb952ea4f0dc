import Logging
import MotionDevices
import MotionWire
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// motiond's socket server: a Unix stream socket speaking docs/protocol.md, and the hub behind it.
public final class MotionServer: @unchecked Sendable {
    // @unchecked: `channel` is set once by `start()` and read by `stop()`, from the owner's thread.
    /// The socket's path.
    public let socketPath: String
    private let group: MultiThreadedEventLoopGroup
    private let hub: Hub
    private var channel: (any Channel)?
    private var monitor: DeviceMonitor?
    private var monitorTask: Task<Void, Never>?

    private let stateSaveInterval: Double

    /// Creates a server for `socketPath`; `release` goes into the greeting.
    ///
    /// - Parameters:
    ///   - stateDirectory: where the calibration is kept across restarts; `nil`: nowhere.
    ///   - stateSaveInterval: seconds between saves while the fusion core runs (and at stop).
    ///   - firstDataTimeout: seconds a buffered capture waits for its first scan before polling
    ///     (default: the capture's own, 1 s or ten sample periods).
    public init(
        socketPath: String, stateDirectory: String? = nil, stateSaveInterval: Double = 60, firstDataTimeout: Double? = nil,
        release: String = "0.1.0", logger: Logger = Logger(label: "motiond")
    ) {
        self.socketPath = socketPath
        self.stateSaveInterval = stateSaveInterval
        // One loop: clients, requests and fan-out never need a lock, and 1000 clients at 100 Hz fit on one core.
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        hub = Hub(
            eventLoop: group.next(), logger: logger, release: release, store: stateDirectory.map { StateStore(directory: $0) },
            firstDataTimeout: firstDataTimeout)
    }

    /// Finds the sensors and starts listening (a stale socket file from a crashed run is replaced).
    public func start() throws {
        try hub.eventLoop.submit { self.hub.refreshDevices() }.wait()
        if access(socketPath, F_OK) == 0 { unlink(socketPath) }
        let hub = self.hub
        channel = try ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ConnectionHandler(hub: hub))
                }
            }
            .bind(unixDomainSocketPath: socketPath)
            .wait()
        hub.logger.info("listening", metadata: ["socket": "\(socketPath)", "devices": "\(hub.devices.count)"])
        let interval = TimeAmount.nanoseconds(Int64(stateSaveInterval * 1e9))
        hub.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { [hub] _ in hub.saveState() }
        // Follow devices as they come and go (the monitor's thread sleeps until udev says something).
        do {
            let monitor = try DeviceMonitor()
            self.monitor = monitor
            let changes = monitor.changes()
            monitorTask = Task { [hub] in
                for await change in changes {
                    hub.logger.info("device \(change.action)", metadata: ["device": "\(change.device)"])
                    hub.eventLoop.execute { hub.refreshDevices() }
                }
            }
        } catch {
            hub.logger.error("cannot follow devices (hot-plug off)", metadata: ["error": "\(error)"])
        }
    }

    /// Stops listening, closes every sensor (putting its attributes back) and removes the socket file.
    public func stop() throws {
        monitor?.stop()
        monitorTask?.cancel()
        monitor = nil
        try channel?.close().wait()
        channel = nil
        try hub.eventLoop.submit { self.hub.stopAll() }.wait()
        unlink(socketPath)
        try group.syncShutdownGracefully()
    }
}
