import MotionDevices
import MotionSystem
import Synchronization

/// Lists one remote machine's devices on a thread of its own, at once and then every `interval`
/// seconds, and hands each listing to the hub as that remote's.
///
/// Off the start path and never waited for: a board that answers slowly, or never, holds only this
/// thread, not the daemon's start (its socket listens meanwhile) nor its stop (which closes the gate
/// and goes on; a listing under way ends with the process). An unreachable board is a problem of its
/// listing: its devices are absent until it answers again.
final class RemoteLister: Sendable {
    private let hub: Hub
    private let remote: NetworkDiscovery
    private let origin: DeviceOrigin
    private let interval: Double
    /// Whether listings may still reach the hub's loop: behind a lock, so that none reaches a loop
    /// that has shut down.
    private let gate = Mutex(true)
    /// The thread, which `stop` wakes but never waits for, or why it could not be made.
    private let thread: Result<WakeableThread, Errno>

    init(hub: Hub, remote: NetworkDiscovery, origin: DeviceOrigin, interval: Double) {
        (self.hub, self.remote, self.origin, self.interval) = (hub, remote, origin, interval)
        thread = Result { () throws(Errno) in try WakeableThread(name: "remote lister") }
    }

    /// Starts the thread; a thread that cannot start is logged, and that remote is not listed.
    func start() {
        let failure: Errno? =
            switch thread {
            case .success(let thread): thread.start { [self] in run(on: thread) }
            case .failure(let error): error
            }
        guard let error = failure else { return }
        hub.logger.error("cannot list a remote's devices", metadata: ["uri": "\(remote.uri)", "error": "\(error)"])
    }

    /// Closes the gate (no listing reaches the hub after this returns) and wakes the thread.
    func stop() {
        gate.withLock { $0 = false }
        if case .success(let thread) = thread { thread.requestStop() }
    }

    private func run(on thread: WakeableThread) {
        let (hub, origin) = (self.hub, self.origin)
        while true {
            let listing: DeviceListing
            do {
                listing = try remote.listDevices()
            } catch {
                listing = DeviceListing(devices: [], problems: [error])
            }
            let delivered = gate.withLock { open in
                guard open else { return false }
                hub.eventLoop.execute { hub.apply(.success(listing), from: origin) }
                return true
            }
            guard delivered else { return }
            _ = thread.wait(timeoutMilliseconds: Int32(interval * 1000))
            guard gate.withLock({ $0 }) else { return }
        }
    }
}
