import Logging
import MotionConfiguration
import ServiceLifecycle

/// Re-reads the configuration at each SIGHUP, as a `Service` beside the parts: a good file's log level
/// and declination apply at once, the settings that need a restart are named in the log; a bad file
/// is logged and the old settings stay.
public struct ConfigurationReload: Service {
    private let hangups: AsyncStream<Void>
    private let server: MotionServer
    private let level: LogLevelSetting
    private let running: Configuration
    private let load: @Sendable () throws -> Configuration
    private let logger: Logger

    /// - Parameters:
    ///   - hangups: one per SIGHUP (`SignalService.hangups`), blocked before the socket exists: a reload
    ///     sent as soon as clients can connect must not meet SIGHUP's default action (terminate).
    ///   - running: the settings the daemon started with; `load` reads the new ones.
    public init(
        hangups: AsyncStream<Void>, server: MotionServer, level: LogLevelSetting, running: Configuration,
        logger: Logger, load: @escaping @Sendable () throws -> Configuration
    ) {
        (self.hangups, self.server, self.level, self.running, self.logger, self.load) = (hangups, server, level, running, logger, load)
    }

    public func run() async throws {
        var current = running
        for await _ in hangups.cancelOnGracefulShutdown() {
            do {
                let next = try load()
                level.value = Logger.Level(rawValue: next.logLevel ?? "info")!
                server.apply(next)
                let pending = next.restartOnlyDifferences(from: current)
                logger.notice("configuration reloaded", metadata: pending.isEmpty ? [:] : ["needs a restart": "\(pending.joined(separator: ", "))"])
                current = next
            } catch {
                logger.error("configuration not reloaded, the old one stays", metadata: ["error": "\(error)"])
            }
        }
    }
}
