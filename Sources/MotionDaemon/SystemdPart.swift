import FoundationEssentials
import MotionHub
import MotionSystem
import NIOCore

/// Tells systemd how the service is doing, the daemon's last part: ready (`READY=1`, `Type=notify`)
/// once every part before it has started, stopping (`STOPPING=1`) before they stop, and `WATCHDOG=1`
/// at half of `WatchdogSec=`, sent from the hub's event loop itself, so that a stuck loop stops the
/// pings and systemd restarts the daemon. One datagram to `$NOTIFY_SOCKET` per message (sd_notify(3)),
/// written by hand: it is one `sendto`, and libsystemd is not a dependency here.
final class SystemdPart: DaemonPart, @unchecked Sendable {
    // @unchecked: `pings` is set by `start` and read by `stop`, one after the other.
    private let hub: Hub
    private let socketPath: String
    /// The socket systemd listens on (`@` starts an abstract name); `nil` when not run by systemd.
    private let notifySocket: String?
    /// How often systemd wants `WATCHDOG=1`, s (half of `WATCHDOG_USEC`), if it does.
    private let watchdogInterval: Double?
    private var pings: RepeatedTask?

    var name: String { "systemd notification" }

    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` from the environment.
    init(hub: Hub, socketPath: String, environment: [String: String] = ProcessInfo.processInfo.environment) {
        (self.hub, self.socketPath) = (hub, socketPath)
        notifySocket = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        let forUs = environment["WATCHDOG_PID"].map { Int32($0) == Syscall.processID() } ?? true
        let usec = environment["WATCHDOG_USEC"].flatMap(Double.init) ?? 0
        watchdogInterval = forUs && usec > 0 ? usec / 2e6 : nil
    }

    func start() throws {
        let devices = try hub.eventLoop.submit { [hub] in hub.devices.count }.wait()
        notify("READY=1\nSTATUS=serving \(devices) sensor devices on \(socketPath)")
        guard let watchdogInterval else { return }
        pings = hub.eventLoop.scheduleRepeatedTask(initialDelay: .zero, delay: .nanoseconds(Int64(watchdogInterval * 1e9))) { [self] _ in
            notify("WATCHDOG=1")
        }
    }

    func stop() throws {
        pings?.cancel()
        pings = nil
        notify("STOPPING=1")
    }

    /// Sends `state` (e.g. `READY=1`) when run by systemd; a failed send is not retried.
    private func notify(_ state: String) {
        guard let notifySocket else { return }
        _ = Syscall.sendDatagram(Array(state.utf8), toUnixSocket: notifySocket)
    }
}
