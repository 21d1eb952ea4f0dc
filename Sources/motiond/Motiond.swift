import ArgumentParser
import Foundation
import Logging
import MotionDaemon
import ServiceLifecycle

/// motiond: serves the machine's motion sensors over a Unix socket (docs/protocol.md).
@main
struct Motiond: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "motiond",
        abstract: "Serve the IIO motion sensors of this machine to programs over a Unix socket.",
        discussion: "Stop it with SIGTERM or SIGINT: it closes every sensor and removes its socket file.")

    @Option(help: "The socket to listen on (default: /run/motiond/motiond.sock as root, else $XDG_RUNTIME_DIR/motiond.sock).")
    var socket: String?

    @Option(help: "The socket file's permissions, octal.")
    var socketMode: String = "0660"

    @Option(help: "The socket file's group: its members may connect (default: the daemon's group).")
    var socketGroup: String?

    @Option(help: "Where the calibration is kept across restarts (default: /var/lib/motiond as root, else $XDG_STATE_HOME/motiond).")
    var stateDirectory: String?

    @Option(help: "Seconds between saves of the calibration while sensors run.")
    var stateSaveInterval: Double = 60

    @Option(help: "Least severe log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    func run() async throws {
        guard let level = Logger.Level(rawValue: logLevel) else {
            throw ValidationError("unknown log level \"\(logLevel)\"")
        }
        LoggingSystem.bootstrap { JournalLogHandler(label: $0, level: level) }
        let logger = Logger(label: "motiond")
        guard stateSaveInterval > 0 else { throw ValidationError("--state-save-interval must be positive") }
        guard let mode = UInt32(socketMode, radix: 8), mode <= 0o777 else { throw ValidationError("--socket-mode must be octal, like 0660") }
        let server = MotionServer(
            socketPath: socket ?? Self.defaultSocket(), stateDirectory: stateDirectory ?? Self.defaultStateDirectory(),
            stateSaveInterval: stateSaveInterval, socketMode: mode, socketGroup: socketGroup, logger: logger)
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: ServerService(server: server))],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
    }

    static func defaultStateDirectory() -> String {
        if getuid() == 0 { return "/var/lib/motiond" }
        let environment = ProcessInfo.processInfo.environment
        let state = environment["XDG_STATE_HOME"] ?? (environment["HOME"] ?? NSTemporaryDirectory()) + "/.local/state"
        return state + "/motiond"
    }

    static func defaultSocket() -> String {
        if getuid() == 0 { return "/run/motiond/motiond.sock" }
        let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] ?? NSTemporaryDirectory()
        return runtime + "/motiond.sock"
    }
}

/// Runs the server until graceful shutdown, then stops it (sensors closed, socket file removed).
struct ServerService: Service {
    let server: MotionServer

    func run() async throws {
        try server.start()
        try? await gracefulShutdown()
        try server.stop()
    }
}
