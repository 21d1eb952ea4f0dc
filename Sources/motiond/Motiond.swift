import ArgumentParser
import FoundationEssentials
import Logging
import MotionConfiguration
import MotionCtlCommands
import MotionDaemon
import MotionDevices
import MotionHub
import MotionSystem
import MotionWire
import NIOCore
import NIOPosix
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// motiond: serves the machine's motion sensors over a Unix socket (docs/protocol.md).
@main
struct Motiond: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "motiond",
        abstract: "Serve the IIO motion sensors of this machine to programs over a Unix socket.",
        discussion: """
            Settings come from the configuration file (see motiond.conf(5) in docs/), then from these flags. \
            SIGHUP re-reads the file (a bad file is logged and the old settings stay); SIGTERM or SIGINT \
            stops the daemon: it closes every sensor, saves its calibration and removes its socket file.
            """,
        version: Release.version)

    static let defaultConfigurationPath = "/etc/motiond/motiond.conf"

    /// The main thread is the daemon's one event loop: the hub, every front end, the signals and Swift
    /// concurrency's jobs run on it (one thread where an async `main` parks the main thread in
    /// libdispatch's `sigsuspend` and needs another for the loop: issue 63, four threads at rest).
    static func main() {
        // The package installs `motionctl` as a link to motiond: one copy of the Swift runtime (issue 63).
        if CommandLine.arguments.first?.split(separator: "/").last == "motionctl" { Motionctl.mainFromSynchronousContext() }
        // Before any thread is made: SIGTERM, SIGINT and SIGHUP are read by the loop (`SignalService`),
        // and every thread made afterwards inherits the mask.
        if let failure = SignalService.blockSignals() { exit(withError: ValidationError("cannot block signals: \(failure)")) }
        ResidentMemory.useOneHeapArena()
        let command: Motiond
        do {
            command = try parse()
        } catch {
            exit(withError: error)
        }
        MultiThreadedEventLoopGroup.withCurrentThreadAsEventLoop { eventLoop in
            ConcurrencyOnNIO.install(on: eventLoop)  // before the first task: none may reach libdispatch's pool
            // Detached: `main` is the main actor's, whose queue nobody drains here (the thread is the loop's).
            Task.detached {
                do {
                    try await command.serve(on: eventLoop)
                } catch {
                    LogWriter.standardError.flush()
                    exit(withError: error)
                }
                LogWriter.standardError.flush()
                Glibc.exit(0)
            }
        }
    }

    @Option(help: "The configuration file (default: \(Motiond.defaultConfigurationPath), if it exists).")
    var config: String?

    // The settings also taken as flags: their help and their reading come from the configuration's
    // table (motiond.conf(5)), so a flag says and checks what the file's key does.
    @Option(help: ArgumentHelp(Configuration.help("socket"))) var socket: String?
    @Option(help: ArgumentHelp(Configuration.help("socket_mode"))) var socketMode: String?
    @Option(help: ArgumentHelp(Configuration.help("socket_group"))) var socketGroup: String?
    @Option(help: ArgumentHelp(Configuration.help("state_directory"))) var stateDirectory: String?
    @Option(help: ArgumentHelp(Configuration.help("state_save_interval"))) var stateSaveInterval: String?
    @Option(help: ArgumentHelp(Configuration.help("motion_event_heartbeat"))) var motionEventHeartbeat: String?
    @Option(help: ArgumentHelp(Configuration.help("tablet_mode"))) var tabletMode: String?
    @Option(help: ArgumentHelp(Configuration.help("log_level"))) var logLevel: String?
    @Option(help: ArgumentHelp(Configuration.help("declination"))) var declination: String?
    @Option(help: ArgumentHelp(Configuration.help("location"))) var location: String?
    @Option(help: ArgumentHelp(Configuration.help("sea_level_pressure"))) var seaLevelPressure: String?
    @Option(help: ArgumentHelp(Configuration.help("height"))) var height: String?
    @Flag(inversion: .prefixedNo, help: ArgumentHelp(Configuration.help("dbus"))) var dbus: Bool?
    @Flag(inversion: .prefixedNo, help: ArgumentHelp(Configuration.help("rebind_stalled_sensors"))) var rebindStalledSensors: Bool?
    @Flag(inversion: .prefixedNo, help: ArgumentHelp(Configuration.help("chip_functions"))) var chipFunctions: Bool?
    @Option(help: ArgumentHelp(Configuration.help("metrics"))) var metrics: String?
    @Option(help: ArgumentHelp(Configuration.help("dsu"))) var dsu: String?

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

    /// Serves until SIGTERM or SIGINT (or a part's failure), on `eventLoop`, the main thread's.
    func serve(on eventLoop: any EventLoop) async throws {
        let load: @Sendable () throws -> Configuration
        let settings: Configuration
        do {
            // The settings given as flags, read and checked as the file's are.
            let flags = try Configuration.flags([
                "socket": socket, "socket_mode": socketMode, "socket_group": socketGroup, "state_directory": stateDirectory,
                "state_save_interval": stateSaveInterval, "motion_event_heartbeat": motionEventHeartbeat, "tablet_mode": tabletMode,
                "log_level": logLevel, "declination": declination, "location": location, "sea_level_pressure": seaLevelPressure, "height": height,
                "dbus": dbus.map { $0 ? "true" : "false" }, "rebind_stalled_sensors": rebindStalledSensors.map { $0 ? "true" : "false" },
                "chip_functions": chipFunctions.map { $0 ? "true" : "false" }, "metrics": metrics, "dsu": dsu,
            ])
            load = { [config] in
                try Configuration.load(path: config ?? Self.defaultConfigurationPath, required: config != nil).overridden(by: flags)
            }
            settings = try load()
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
            var hardware = HardwareSource(
                mountMatrixOverrides: try settings.mountMatrixOverrides(), networkSensors: settings.networkSensors ?? [],
                motionEventHeartbeat: settings.motionEventHeartbeat ?? AdaptivePolling.heartbeat)
            hardware.rebindsStalledSensors = settings.rebindStalledSensors ?? false
            hardware.usesChipFunctions = settings.chipFunctions ?? true
            source = hardware
        }
        let server = MotionServer(
            socketPath: settings.socket ?? Self.defaultSocket(),
            stateDirectory: settings.stateDirectory ?? Self.defaultStateDirectory(),
            stateSaveInterval: settings.stateSaveInterval ?? 60, source: source,
            socketMode: UInt32(settings.socketMode ?? "0660", radix: 8)!, socketGroup: settings.socketGroup,
            servesDBus: settings.dbus ?? false, switchesTabletMode: settings.tabletMode != "off", mqtt: settings.mqtt, metrics: settings.metrics.flatMap(Configuration.hostAndPort), dsu: settings.dsu,
            pagesOutWhenSettled: true, eventLoop: eventLoop, logger: logger)
        server.apply(settings)
        let signals = try SignalService(eventLoop: eventLoop, logger: logger)
        let reload = ConfigurationReload(
            hangups: signals.hangups, server: server, level: level, running: settings, logger: logger, load: load)
        try await server.run(with: [signals, reload])
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
