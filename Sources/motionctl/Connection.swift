import ArgumentParser
import FoundationEssentials
import MotionClientCore

/// The options every command that talks to motiond takes.
struct ConnectionOptions: ParsableArguments {
    @Option(help: "motiond's socket (default: $MOTIOND_SOCKET, else $XDG_RUNTIME_DIR/motiond.sock if present, else /run/motiond/motiond.sock).")
    var socket: String?

    var client: MotionClient { MotionClient(socketPath: socket) }
}

/// Exit codes (sysexits.h), so that scripts can tell what went wrong.
enum ExitStatus {
    /// motiond is not running.
    static let unavailable: Int32 = 69
    /// The socket refuses this user.
    static let noPermission: Int32 = 77
    /// Anything else the daemon or the connection did.
    static let failure: Int32 = 1
}

/// Runs `body`, turning a client error into its message on stderr and its exit code.
func reportingErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as MotionClientError {
        throw fail(error)
    }
}

/// Prints what went wrong and what to do, and gives the exit code to leave with.
func fail(_ error: MotionClientError) -> ExitCode {
    writeStandardError("motionctl: \(error)\n")
    switch error {
    case .daemonNotRunning: return ExitCode(ExitStatus.unavailable)
    case .permissionDenied: return ExitCode(ExitStatus.noPermission)
    default: return ExitCode(ExitStatus.failure)
    }
}

/// A message as the protocol writes it (docs/protocol.md): one JSON object, `class` first.
func protocolLine(_ message: some ServerMessage) -> String {
    guard let line = try? Wire.encode(message) else { return "{}" }
    return String(decoding: line.dropLast(), as: UTF8.self)  // without its newline: `print` adds one
}

extension AttitudeReferenceFrame: ExpressibleByArgument {}
extension StreamKind: ExpressibleByArgument {}
