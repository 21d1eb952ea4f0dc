import FoundationEssentials
import Logging
import MotionDevices
import MotionSystem
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
    /// Whether to serve iio-sensor-proxy's D-Bus interface on the system bus (docs/dbus.md).
    private let servesDBus: Bool
    private var sensorProxy: SensorProxyService?
    /// The MQTT bridge's settings, and the bridge once started.
    private let mqtt: MQTTSettings?
    private var mqttBridge: MQTTBridge?
    /// Where to serve metrics (`host:port`), and the server once started.
    private let metricsAddress: String?
    private var metricsServer: MetricsServer?
    /// Where the metrics are served, once started (the port chosen, for `:0`).
    public var metricsPort: Int? { metricsServer?.localAddress?.port }

    private let stateSaveInterval: Double
    private let socketMode: mode_t
    private let socketGroup: String?
    private let notifier = SystemdNotifier()
    private var activated = false
    /// The calibration's periodic save and the relisting of remote devices: cancelled at shutdown, before
    /// it waits for the work they start off the loop.
    private var periodicTasks: [RepeatedTask] = []
    /// Whether this server made the socket file (and so removes it at stop).
    private var bound = false

    /// The listening socket systemd passed (sd_listen_fds(3): `LISTEN_FDS`=1 for this `LISTEN_PID`,
    /// descriptor 3), if it did.
    static func activatedSocket(environment: [String: String] = ProcessInfo.processInfo.environment) -> CInt? {
        guard environment["LISTEN_PID"].flatMap(Int32.init) == getpid(), environment["LISTEN_FDS"] == "1" else { return nil }
        return 3
    }

    /// Creates a server for `socketPath`; `release` goes into the greeting.
    ///
    /// - Parameters:
    ///   - stateDirectory: where the calibration is kept across restarts; `nil`: nowhere.
    ///   - stateSaveInterval: seconds between saves while the fusion core runs (and at stop).
    ///   - source: where the sensors come from (default: this machine's, `HardwareSource`).
    ///   - socketMode: the socket file's permissions (default 0660: owner and group may connect).
    ///   - socketGroup: the socket file's group (default: the daemon's own).
    ///   - maximumClients: connections served at once (default 1000); more are told so and closed.
    ///   - servesDBus: whether to serve iio-sensor-proxy's interface, `net.hadess.SensorProxy`, on the
    ///     system bus (`DBUS_SYSTEM_BUS_ADDRESS`, else the standard one) as well (default false).
    ///   - mqtt: the broker to publish streams to (default none; docs/fleet.md).
    ///   - metrics: where to serve Prometheus metrics over HTTP, `host:port` (default nowhere; docs/fleet.md).
    public init(
        socketPath: String, stateDirectory: String? = nil, stateSaveInterval: Double = 60, source: any SensorSource = HardwareSource(),
        socketMode: UInt32 = 0o660, socketGroup: String? = nil, maximumClients: Int = 1000, release: String = "0.1.0",
        servesDBus: Bool = false, mqtt: MQTTSettings? = nil, metrics: String? = nil,
        logger: Logger = Logger(label: "motiond")
    ) {
        self.socketPath = socketPath
        self.mqtt = mqtt
        self.metricsAddress = metrics
        self.servesDBus = servesDBus
        self.socketMode = mode_t(socketMode)
        self.socketGroup = socketGroup
        self.stateSaveInterval = stateSaveInterval
        // One loop: clients, requests and fan-out never need a lock, and 1000 clients at 100 Hz fit on one core.
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        hub = Hub(
            eventLoop: group.next(), logger: logger, release: release, store: stateDirectory.map { StateStore(directory: $0) },
            source: source, maximumClients: maximumClients)
    }

    /// Finds the sensors and starts listening (a stale socket file from a crashed run is replaced).
    public func start() throws {
        let listing = Result { try self.hub.source.listDevices() }  // off the loop: it blocks
        try hub.eventLoop.submit { self.hub.apply(listing) }.wait()
        let hub = self.hub
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            // A client that shuts down its writing side after its requests (socat at the end of its
            // input) still gets its answers.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ConnectionHandler(hub: hub))
                }
            }
        if let inherited = Self.activatedSocket() {
            // systemd made the socket (motiond.socket): its unit sets the path, owner and mode.
            activated = true
            channel = try bootstrap.withBoundSocket(inherited).wait()
            hub.logger.info("using the socket systemd passed", metadata: ["descriptor": "\(inherited)"])
        } else {
            try removeStaleSocket()
            channel = try bootstrap.bind(unixDomainSocketPath: socketPath).wait()
            bound = true
            try setAccess()
        }
        hub.logger.info("listening", metadata: ["socket": "\(socketPath)", "devices": "\(hub.devices.count)"])
        if servesDBus { try serveDBus() }
        if let mqtt { try startMQTT(mqtt) }
        if let metricsAddress { try serveMetrics(on: metricsAddress) }
        let interval = TimeAmount.nanoseconds(Int64(stateSaveInterval * 1e9))
        periodicTasks.append(hub.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { [hub] _ in hub.saveState() })
        notifier.notify("READY=1\nSTATUS=serving \(hub.devices.count) sensor devices on \(socketPath)")
        if let watchdog = notifier.watchdogInterval {
            // Sent from the event loop itself: a stuck loop stops the pings and systemd restarts us.
            let every = TimeAmount.nanoseconds(Int64(watchdog * 1e9))
            hub.eventLoop.scheduleRepeatedTask(initialDelay: .zero, delay: every) { [notifier] _ in notifier.notify("WATCHDOG=1") }
        }
        // Follow devices as they come and go (the monitor's thread sleeps until udev says something).
        if hub.source.followsHotPlug { followHotPlug() }
        if let interval = hub.source.relistInterval { relist(every: interval) }
    }

    private func followHotPlug() {
        do {
            let monitor = try DeviceMonitor()
            self.monitor = monitor
            // Handed from the monitor's own thread to the event loop: no Swift concurrency thread in
            // between, so a busy cooperative pool cannot hold a hot-plug back.
            let failure = monitor.start { [hub] result in
                switch result {
                case .success(let change):
                    hub.logger.info("device \(change.action)", metadata: ["device": "\(change.device)"])
                    // Listed here, on the monitor's thread: discovery blocks, the event loop must not.
                    let listing = Result { try hub.source.listDevices() }  // off the loop: it blocks
                    hub.eventLoop.execute { hub.apply(listing) }
                case .failure(let error):
                    hub.logger.error("stopped following devices (hot-plug off until restart)", metadata: ["error": "\(error)"])
                }
            }
            if let failure { throw failure }
        } catch {
            hub.logger.error("cannot follow devices (hot-plug off)", metadata: ["error": "\(error)"])
        }
    }

    /// Lists the devices again every `interval` seconds, off the loop (another machine's devices: a
    /// board that comes back, or one that went away).
    private func relist(every interval: Double) {
        let hub = self.hub
        let every = TimeAmount.nanoseconds(Int64(interval * 1e9))
        // Scheduled again once a listing is done: one that waits for an unreachable host must not pile up.
        periodicTasks.append(hub.eventLoop.scheduleRepeatedAsyncTask(initialDelay: every, delay: every) { _ in
            let listed = hub.eventLoop.makePromise(of: Void.self)
            hub.offLoop.run({ try hub.source.listDevices() }, then: { listing in
                hub.apply(listing)
                listed.succeed()
            })
            return listed.futureResult
        })
    }

    /// Serves `net.hadess.SensorProxy` on the system bus: the service on its own thread, fed by a
    /// bridge that is a client of the hub.
    private func serveDBus() throws {
        let hub = self.hub
        let bridge = NIOLoopBoundBox.makeEmptyBox(valueType: SensorProxyBridge.self, eventLoop: hub.eventLoop)
        let service = try SensorProxyService(logger: hub.logger) { sensor, claimed in
            hub.eventLoop.execute { bridge.value?.claimChanged(sensor, claimed: claimed) }
        }
        try hub.eventLoop.submit {
            let fed = SensorProxyBridge(hub: hub, service: service)
            fed.start()
            bridge.value = fed
        }.wait()
        service.start()
        sensorProxy = service
        hub.logger.info("serving D-Bus", metadata: ["name": "\(SensorProxyService.busName)"])
    }

    /// Publishes the configured streams to an MQTT broker, through a bridge that is a client of the hub.
    private func startMQTT(_ settings: MQTTSettings) throws {
        let hub = self.hub
        let hostName = (try? Syscall.hostName().get()) ?? "localhost"
        mqttBridge = try hub.eventLoop.submit {
            let bridge = MQTTBridge(hub: hub, settings: settings, hostName: hostName)
            try bridge.start(hostName: hostName)
            return bridge
        }.wait()
    }

    /// Serves Prometheus metrics over HTTP on `address`.
    private func serveMetrics(on address: String) throws {
        let hub = self.hub
        let bridge = mqttBridge
        let metrics = NIOLoopBoundBox.makeBoxSendingValue(DaemonMetrics(), eventLoop: hub.eventLoop)
        metricsServer = try MetricsServer(address: address, eventLoop: hub.eventLoop) {
            var snapshot = hub.metrics()
            snapshot.mqtt = bridge?.counters
            return metrics.value.exposition(of: snapshot)
        }
        hub.logger.info("serving metrics", metadata: ["address": "\(metricsServer?.localAddress.map { "\($0)" } ?? address)"])
    }

    /// Applies the settings that can change while running (declination); others need a restart.
    public func apply(declination: Double) {
        hub.eventLoop.execute { [hub] in hub.setDeclination(declination) }
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
    public struct AccessError: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// Stops listening, closes every sensor (putting its attributes back) and removes the socket file.
    public func stop() throws {
        notifier.notify("STOPPING=1")
        monitor?.stop()
        monitor = nil
        sensorProxy?.stop()
        sensorProxy = nil
        try channel?.close().wait()
        channel = nil
        try metricsServer?.close()
        metricsServer = nil
        if let bridge = mqttBridge {
            try hub.eventLoop.submit { bridge.detach() }.wait()
            bridge.stop()
            mqttBridge = nil
        }
        let periodicTasks = self.periodicTasks
        self.periodicTasks = []
        try hub.eventLoop.submit {
            for task in periodicTasks { task.cancel() }
            self.hub.stopAll()
        }.wait()
        hub.waitForOffLoopWork()
        if bound { _ = Syscall.remove(socketPath) }  // an activated socket belongs to systemd, and another's to it
        try group.syncShutdownGracefully()
    }
}
