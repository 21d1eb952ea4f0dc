import CoreMetrics
import Logging
import MotionConfiguration
import MotionCore
import MotionDBus
import MotionDevices
import MotionHub
import MotionMetrics
import MotionMQTT
import MotionDSU
import MotionSocketServer
import MotionTabletMode
import MotionSystem
import MotionWire
import NIOCore
import NIOPosix
import ServiceLifecycle

/// motiond: the hub core and its front ends (the socket, and as configured the D-Bus drop-in, the
/// MQTT bridge and the metrics), each a `Service` of one `ServiceGroup` (docs/architecture.md).
public final class MotionServer: Sendable {
    /// The socket's path.
    public let socketPath: String
    /// The one loop everything runs on, and the group of one loop it belongs to when it is the server's own.
    private let loop: any EventLoop
    private let ownLoops: MultiThreadedEventLoopGroup?
    private let hub: Hub
    /// In start order: the hub, logind's sleeps, the socket, the other front ends, then systemd's readiness and watchdog.
    private let parts: PartGroup
    private let metrics: MetricsFrontEnd?
    private let dsu: DSUFrontEnd?

    /// Descriptors kept from clients for the rest: sensors, the state file, the metrics port's
    /// connections (`MetricsServer.maximumConnections`), D-Bus, MQTT, the log.
    static let reservedDescriptors = 128

    /// Where the metrics are served, once started (the port chosen, for `:0`).
    public var metricsPort: Int? { metrics?.localAddress?.port }
    /// Where the DSU server listens, once started (the port chosen, for `:0`).
    public var dsuPort: Int? { dsu?.localAddress?.port }

    /// Creates a server for `socketPath`; `release` goes into the greeting.
    ///
    /// - Parameters:
    ///   - stateDirectory: where the calibration is kept across restarts; `nil`: nowhere.
    ///   - stateSaveInterval: seconds between saves while the fusion core runs (and at stop).
    ///   - source: where the sensors come from (default: this machine's, `HardwareSource`).
    ///   - socketMode: the socket file's permissions (default 0660: owner and group may connect).
    ///   - socketGroup: the socket file's group (default: the daemon's own).
    ///   - maximumClients: connections served at once (default 1000); more are told so and closed.
    ///   - servesDBus: whether to serve iio-sensor-proxy's interface on the system bus as well (`SensorProxyFrontEnd`), and
    ///     to ask GeoClue where the machine is for `xTrueNorthZVertical` (`GeoClueFrontEnd`).
    ///   - switchesTabletMode: whether to make a tablet-mode switch from the hinge where the kernel reports none (`TabletModeFrontEnd`).
    ///   - mqtt: the broker to publish streams to (default none; docs/fleet.md).
    ///   - metrics: the host and port of Prometheus metrics over HTTP, port 0 for any free one (default nowhere; docs/fleet.md).
    ///   - dsu: the DSU server for emulators (default none; docs/games.md).
    ///   - pagesOutWhenSettled: whether the process gives back its code pages 5 s after the sensors
    ///     settle (`ResidentMemory`): the motiond executable's choice, not a host process's (default false).
    ///   - eventLoop: the loop the hub and every front end run on (motiond's: its main thread's, which
    ///     Swift concurrency's jobs also run on, so that one thread serves all); default: a loop of the
    ///     server's own, shut down when it stops.
    public init(
        socketPath: String, stateDirectory: String? = nil, stateSaveInterval: Double = 60, source: any SensorSource = HardwareSource(),
        socketMode: UInt32 = 0o660, socketGroup: String? = nil, maximumClients: Int = 1000, release: String = Release.version,
        servesDBus: Bool = false, switchesTabletMode: Bool = false, mqtt: MQTTSettings? = nil, metrics: (host: String, port: Int)? = nil,
        dsu: DSUSettings? = nil, pagesOutWhenSettled: Bool = false, eventLoop: (any EventLoop)? = nil,
        logger: Logger = Logger(label: "motiond")
    ) {
        self.socketPath = socketPath
        // One loop: clients, requests and fan-out never need a lock, and 1000 clients at 100 Hz fit on one core.
        ownLoops = eventLoop == nil ? MultiThreadedEventLoopGroup(numberOfThreads: 1) : nil
        loop = eventLoop ?? ownLoops!.next()
        // Clients take one descriptor each; the rest of the daemon keeps `reservedDescriptors`, so that
        // a full house of clients never keeps the calibration from being saved nor a sensor from opening.
        let descriptors = Syscall.raiseDescriptorLimit(toAtMost: 65536)
        let clientLimit = max(1, min(maximumClients, descriptors - Self.reservedDescriptors))
        if clientLimit < maximumClients {
            logger.notice("fewer clients for the descriptor limit", metadata: ["clients": "\(clientLimit)", "descriptor limit": "\(descriptors)"])
        }
        let hub = Hub(
            eventLoop: loop, logger: logger, release: release, store: stateDirectory.map { StateStore(directory: $0) },
            source: source, maximumClients: clientLimit, pagesOutWhenSettled: pagesOutWhenSettled,
            mountMatrixWording: { device, matrix in ("motiond.conf", MountMatrixSetting.line(name: device, matrix: matrix)) })
        self.hub = hub
        self.metrics = metrics.map { MetricsFrontEnd(hub: hub, host: $0.host, port: $0.port) }
        // The front ends count on the metrics' registry, or on nothing when none are served.
        let factory = self.metrics?.factory ?? NOOPMetricsHandler.instance
        self.dsu = dsu.map { DSUFrontEnd(hub: hub, settings: $0, socketPath: socketPath, metrics: factory) }
        var parts: [any DaemonPart] = [
            HubPart(hub: hub, stateSaveInterval: stateSaveInterval),
            // logind's sleeps, wherever a system bus answers: not gated on the D-Bus drop-in (docs/sleep.md).
            SleepFrontEnd(hub: hub),
            SocketServer(hub: hub, group: loop, socketPath: socketPath, socketMode: socketMode, socketGroup: socketGroup),
        ]
        if servesDBus { parts += [SensorProxyFrontEnd(hub: hub), GeoClueFrontEnd(hub: hub)] }
        if switchesTabletMode { parts.append(TabletModeFrontEnd(hub: hub, logger: logger)) }
        if let mqtt { parts.append(MQTTFrontEnd(hub: hub, settings: mqtt, metrics: factory)) }
        if let dsu = self.dsu { parts.append(dsu) }
        if let metrics = self.metrics { parts.append(metrics) }
        parts.append(SystemdPart(hub: hub, socketPath: socketPath))
        self.parts = PartGroup(parts: parts, logger: logger)
    }

    /// Runs the daemon until one of `others` ends (`SignalService` at SIGTERM) or a part fails, then
    /// stops every part in reverse order: closes every sensor (putting its attributes back), saves the
    /// calibration and removes the socket file.
    public func run(with others: [any Service] = []) async throws {
        defer { shutDownLoops() }
        try await parts.run(with: others)
    }

    /// Starts every part and returns once they all have (for programs and tests that run the daemon in
    /// their own process); throws what kept a part from starting, once those started have stopped.
    public func start() async throws {
        do {
            try await parts.start()
        } catch {
            shutDownLoops()
            throw error
        }
    }

    /// Stops every part, in the reverse of their start.
    public func stop() async throws {
        defer { shutDownLoops() }
        try await parts.stop()
    }

    private func shutDownLoops() {
        ownLoops?.shutdownGracefully { _ in }
    }

    /// Applies the settings that can change while running (declination, sea-level pressure, height);
    /// others need a restart.
    public func apply(_ settings: Configuration) {
        let live = settings.live
        hub.eventLoop.execute { [hub] in hub.apply(live) }
    }
}
