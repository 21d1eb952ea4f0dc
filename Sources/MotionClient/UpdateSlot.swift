import Foundation
import Synchronization

/// One running subscription of a CoreMotion-shaped manager (`Pedometer`, `Altimeter`…): starting
/// again replaces it, stopping cancels it.
final class UpdateSlot: Sendable {
    private let subscription = Mutex<Subscription?>(nil)

    /// Runs `start` (which subscribes) in place of what ran before.
    func replace(with start: () -> Subscription) {
        stop()
        let started = start()
        subscription.withLock { $0 = started }
    }

    func stop() {
        subscription.withLock { current in
            current?.cancel()
            current = nil
        }
    }

    deinit { stop() }

    /// Calls `body` on `queue`, or at once where there is none.
    static func run(on queue: OperationQueue?, _ body: @escaping @Sendable () -> Void) {
        if let queue { queue.addOperation(body) } else { body() }
    }
}

extension Date {
    /// The wall-clock instant of a stream timestamp (ns of CLOCK_MONOTONIC, the daemon's and this
    /// process's: one machine), through the two clocks' offset now.
    init(monotonicNanoseconds t: Int64) {
        self.init(timeIntervalSinceNow: Double(t) * 1e-9 - ProcessInfo.processInfo.systemUptime)
    }
}
