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
    /// Whether listings may still reach the hub's loop, and the wake pipe that ends the wait between
    /// them (nil once the thread has closed it); behind one lock, so that `stop` never wakes a
    /// descriptor the thread has closed, nor a listing reaches a loop that has shut down.
    private let gate: Mutex<(open: Bool, wake: (read: Int32, write: Int32)?)>

    init(hub: Hub, remote: NetworkDiscovery, origin: DeviceOrigin, interval: Double) {
        (self.hub, self.remote, self.origin, self.interval) = (hub, remote, origin, interval)
        gate = Mutex((true, try? Syscall.makeWakePipe().get()))
    }

    /// Starts the thread; a thread that cannot start is logged, and that remote is not listed.
    func start() {
        let thread = OSThread(name: "remote lister") { [self] in run() }
        if let error = thread.start(detached: true) {
            hub.logger.error("cannot list a remote's devices", metadata: ["uri": "\(remote.uri)", "error": "\(error)"])
            closeWakePipe()
        }
    }

    /// Closes the gate (no listing reaches the hub after this returns) and wakes the thread.
    func stop() {
        gate.withLock { gate in
            gate.open = false
            if let wake = gate.wake { Syscall.wake(wake.write) }
        }
    }

    private func run() {
        defer { closeWakePipe() }
        let (hub, origin) = (self.hub, self.origin)
        while true {
            let listing: DeviceListing
            do {
                listing = try remote.listDevices()
            } catch {
                listing = DeviceListing(devices: [], problems: [error])
            }
            let delivered = gate.withLock { gate in
                guard gate.open else { return false }
                hub.eventLoop.execute { hub.apply(.success(listing), from: origin) }
                return true
            }
            guard delivered else { return }
            if let wakeRead = gate.withLock({ $0.wake?.read }) {
                _ = Syscall.waitReadable(wakeRead, timeoutMilliseconds: Int32(interval * 1000))
            } else {
                Syscall.sleep(nanoseconds: Int64(interval * 1e9))  // no pipe to be woken by: the stop waits out the interval
            }
            guard gate.withLock({ $0.open }) else { return }
        }
    }

    private func closeWakePipe() {
        gate.withLock { gate in
            guard let wake = gate.wake else { return }
            Syscall.close(wake.read)
            Syscall.close(wake.write)
            gate.wake = nil
        }
    }
}
