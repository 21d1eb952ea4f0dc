import Logging
import MotionHub
import MotionSystem
import ServiceLifecycle

/// Lets each part of the daemon start once the parts before it have: gate `i` opens (true) when
/// parts `0..<i` have started, or closes (false) when one of them failed to.
final class StartOrder: Sendable {
    private let gates: [(stream: AsyncStream<Bool>, continuation: AsyncStream<Bool>.Continuation)]

    init(parts: Int) {
        gates = (0...parts).map { _ in AsyncStream.makeStream(of: Bool.self) }
        gates[0].continuation.yield(true)
    }

    /// Waits until the parts before `index` have started (true) or one failed (false); false if the
    /// task is cancelled meanwhile. Once per index: each gate has one waiter.
    func turn(of index: Int) async -> Bool {
        var iterator = gates[index].stream.makeAsyncIterator()
        return await iterator.next() ?? false
    }

    /// Part `index` started (or failed to): the next may start (or must not).
    func passed(_ index: Int, started: Bool) {
        gates[index + 1].continuation.yield(started)
        gates[index + 1].continuation.finish()
    }
}

/// One part of the daemon as a swift-service-lifecycle `Service`: it starts after the parts before it
/// (`StartOrder`), runs until graceful shutdown, then stops. The `ServiceGroup` shuts its services
/// down in reverse order, so the parts stop in the reverse of their start; a part that fails to
/// start throws, and the group (told to shut down gracefully on failure) stops those started.
struct PartService: Service {
    let part: any DaemonPart
    let index: Int
    let order: StartOrder
    let logger: Logger

    func run() async throws {
        let mayStart = await cancelWhenGracefulShutdown { [order, index] in await order.turn(of: index) }
        guard mayStart else {
            // A part before it failed, or shutdown came first: the parts after it must not start
            // either, and it waits for its turn to stop, as the group expects of a service that is not
            // the one it is stopping.
            order.passed(index, started: false)
            try? await gracefulShutdown()
            return
        }
        do {
            // Blocking work (it waits for the hub's loop): on a thread of its own, not the loop. A stop
            // asked meanwhile (SIGTERM) interrupts what the start waits for (a bus that never answers).
            try await withGracefulShutdownHandler {
                try await OSThread.run(named: "start") { [part] in try part.start() }
            } onGracefulShutdown: { [part] in
                part.interruptStart()
            }
        } catch {
            logger.error("\(part.name) did not start", metadata: ["error": "\(error)"])
            order.passed(index, started: false)
            throw error
        }
        order.passed(index, started: true)
        // Runs until the daemon stops, or the part fails for good, which stops the daemon with its error.
        let failure = await cancelWhenGracefulShutdown { [part] in await part.failure() }
        if let failure { logger.error("\(part.name) failed", metadata: ["error": "\(failure)"]) }
        do {
            try await OSThread.run(named: "stop") { [part] in try part.stop() }
        } catch {
            logger.error("\(part.name) did not stop cleanly", metadata: ["error": "\(error)"])
            throw error
        }
        if let failure { throw failure }
    }
}
