import ArgumentParser
import FoundationEssentials
import Logging
import MotionConfiguration
import MotionDaemon
import MotionDevices
import MotionHub
import MotionSystem
import NIOCore
import NIOPosix
import ServiceLifecycle
import UnixSignals

/// motiond: serves the machine's motion sensors over a Unix socket (docs/protocol.md).
@main
struct Motiond: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "motiond",
        abstract: "Serve the IIO motion sensors of this machine to programs over a Unix socket.",
        discussion: """
            Settings come from the configuration file (see motiond.conf(5) in docs/), then from these flags. \
            SIGHUP re-reads the file (a bad file is logged and the old settings stay); SIGTERM or SIGINT \
            stops the daemon: it closes every sensor, saves its calibration and removes its socket file.
            """)

    static let defaultConfigurationPath = "/etc/motiond/motiond.conf"

    static func main() async {
        // Swift concurrency's jobs (lifecycle, signals) run on NIO's event loops, not libdispatch's
        // worker pool: that pool's monitor wakes the process every second for good (a daemon with no
        // clients should sleep), and a job hopping through it costs a thread wake-up.
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        do {
            var command = try parseAsRoot()
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch {
            LogWriter.standardError.flush()
            exit(withError: error)
        }
        LogWriter.standardError.flush()
    }

    @Option(help: "The configuration file (default: \(Motiond.defaultConfigurationPath), if it exists).")
    var config: String?

    @Option(help: "The socket to listen on (default: /run/motiond/motiond.sock as root, else $XDG_RUNTIME_DIR/motiond.sock).")
    var socket: String?

    @Option(help: "The socket file's permissions, octal (default 0660).")
    var socketMode: String?

    @Option(help: "The socket file's group: its members may connect (default: the daemon's group).")
    var socketGroup: String?

    @Option(help: "Where the calibration is kept across restarts (default: $STATE_DIRECTORY, else /var/lib/motiond as root, else $XDG_STATE_HOME/motiond).")
    var stateDirectory: String?

    @Option(help: "Seconds between saves of the calibration while sensors run (default 60).")
    var stateSaveInterval: Double?

    @Option(help: "Least severe log level: trace, debug, info, notice, warning, error, critical (default info).")
    var logLevel: String?

    @Option(help: "Magnetic declination, degrees east of true north, for the true-north frame (default 0).")
    var declination: Double?

    @Flag(inversion: .prefixedNo, help: "Serve iio-sensor-proxy's D-Bus interface (net.hadess.SensorProxy) on the system bus as well (default: off, or the configuration's dbus).")
    var dbus: Bool?

    @Option(help: "Serve Prometheus metrics over HTTP at host:port, such as 127.0.0.1:9464 (default: the configuration's metrics, else none).")
    var metrics: String?

    @Option(help: "Play this recording (docs/recording.md) instead of reading the machine's sensors.")
    var replay: String?

    @Option(help: "Replay speed: 2 plays twice as fast.")
    var speed: Double = 1

    @Flag(help: "Replay the recording over and over.")
    var loop = false

    func validate() throws {
        guard speed > 0, speed.isFinite else { throw ValidationError("--speed must be a positive number, not \(speed)") }
        if replay == nil && (loop || speed != 1) { throw ValidationError("--speed and --loop go with --replay FILE") }
    }

    /// The settings given as flags.
    var flags: Configuration {
        var c = Configuration()
        c.socket = socket
        c.socketMode = socketMode
        c.socketGroup = socketGroup
        c.stateDirectory = stateDirectory
        c.stateSaveInterval = stateSaveInterval
        c.logLevel = logLevel
        c.declination = declination
        c.dbus = dbus
        c.metrics = metrics
        return c
    }

    func run() async throws {
        let path = config ?? Self.defaultConfigurationPath
        let settings: Configuration
        do {
            let file = try Configuration.load(path: path, required: config != nil)
            settings = file.overridden(by: flags)
            try settings.validate(path: "command line")
        } catch {
            throw ValidationError("\(error)")
        }
        let level = LogLevelSetting(Logger.Level(rawValue: settings.logLevel ?? "info")!)
        LoggingSystem.bootstrap { JournalLogHandler(label: $0, level: level) }
        let logger = Logger(label: "motiond")
        let source: any SensorSource
        if let replay {
            do {
                source = try ReplaySource(path: replay, speed: speed, loops: loop)
            } catch {
                throw ValidationError("cannot replay: \(error)")
            }
        } else {
            source = HardwareSource(mountMatrixOverrides: try settings.mountMatrixOverrides(), networkSensors: settings.networkSensors ?? [])
        }
        let metrics: (host: String, port: Int)?
        do {
            metrics = try settings.metrics.map(Configuration.hostAndPort)
        } catch {
            throw ValidationError("\(error)")
        }
        let server = MotionServer(
            socketPath: settings.socket ?? Self.defaultSocket(),
            stateDirectory: settings.stateDirectory ?? Self.defaultStateDirectory(),
            stateSaveInterval: settings.stateSaveInterval ?? 60, source: source,
            socketMode: UInt32(settings.socketMode ?? "0660", radix: 8)!, socketGroup: settings.socketGroup,
            servesDBus: settings.dbus ?? false, mqtt: settings.mqtt, metrics: metrics, logger: logger)
        server.apply(declination: settings.declination ?? 0)
        let reload = ConfigurationReload(
            hangups: await UnixSignalsSequence(trapping: .sighup), server: server, level: level, running: settings, logger: logger
        ) {
            try Configuration.load(path: path, required: config != nil).overridden(by: flags)
        }
        try await server.run(gracefulShutdownSignals: [.sigterm, .sigint], with: [reload])
    }

    static func defaultStateDirectory() -> String {
        let environment = ProcessInfo.processInfo.environment
        // systemd's StateDirectory= (the service runs as its own user).
        if let given = environment["STATE_DIRECTORY"], !given.isEmpty { return given }
        if Syscall.userID() == 0 { return "/var/lib/motiond" }
        let state = environment["XDG_STATE_HOME"] ?? (environment["HOME"] ?? temporaryDirectory) + "/.local/state"
        return state + "/motiond"
    }

    /// `$TMPDIR`, else /tmp.
    static var temporaryDirectory: String { ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp" }

    static func defaultSocket() -> String {
        if Syscall.userID() == 0 { return "/run/motiond/motiond.sock" }
        let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] ?? temporaryDirectory
        return runtime + "/motiond.sock"
    }
}
