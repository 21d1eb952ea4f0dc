import Logging
import MotionHub
import ServiceLifecycle
import Synchronization

/// The daemon's parts as the services of one `ServiceGroup`: started in order, each once the one
/// before it has; stopped in reverse; a part that fails to start stops those that had started and
/// keeps those after it from starting, and its error is what `run` or `start` throws.
package final class PartGroup: Sendable {
    private let parts: [any DaemonPart]
    private let logger: Logger
    /// The group `start` runs, for `stop`.
    private let running = Mutex<(group: ServiceGroup, task: Task<Void, any Error>)?>(nil)

    /// `parts` in start order.
    package init(parts: [any DaemonPart], logger: Logger) {
        self.parts = parts
        self.logger = logger
    }

    /// The parts as services, with `others` (such as the reload on SIGHUP) after them; any service
    /// that ends or fails shuts the group down.
    private func serviceGroup(others: [any Service]) -> (ServiceGroup, StartOrder) {
        let order = StartOrder(parts: parts.count)
        let partServices: [any Service] = parts.enumerated().map { PartService(part: $1, index: $0, order: order, logger: logger) }
        let services = (partServices + others).map {
            ServiceGroupConfiguration.ServiceConfiguration(
                service: $0, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup)
        }
        // No `gracefulShutdownSignals`: the daemon reads its signals itself (`SignalService`, one of `others`).
        let configuration = ServiceGroupConfiguration(services: services, logger: logger)
        return (ServiceGroup(configuration: configuration), order)
    }

    /// Runs every part until a service ends (`SignalService` at SIGTERM) or fails, then stops them.
    package func run(with others: [any Service] = []) async throws {
        let (group, _) = serviceGroup(others: others)
        try await group.run()
    }

    /// Starts every part and returns once they all have; throws what kept a part from starting, once
    /// those started have stopped.
    package func start() async throws {
        let (group, order) = serviceGroup(others: [])
        let task = Task { try await group.run() }
        running.withLock { $0 = (group, task) }
        if await !order.turn(of: parts.count) {
            running.withLock { $0 = nil }
            try await task.value
        }
    }

    /// Stops every part started by `start`, in the reverse of their start.
    package func stop() async throws {
        guard let (group, task) = running.withLock({ running in defer { running = nil }; return running }) else { return }
        await group.triggerGracefulShutdown()
        try await task.value
    }
}
