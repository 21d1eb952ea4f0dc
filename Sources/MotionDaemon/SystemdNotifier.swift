import FoundationEssentials
import MotionSystem

#if canImport(Glibc)
import Glibc
#endif

/// Tells systemd how the service is doing: one datagram to `$NOTIFY_SOCKET` per message
/// (sd_notify(3)). Written by hand: it is one `sendto`, and libsystemd is not a dependency here.
struct SystemdNotifier: Sendable {
    /// The socket systemd listens on (`@` starts an abstract name); `nil` when not run by systemd.
    let socketPath: String?
    /// How often systemd wants `WATCHDOG=1`, s (half of `WATCHDOG_USEC`), if it does.
    let watchdogInterval: Double?

    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` from the environment.
    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        socketPath = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        let forUs = environment["WATCHDOG_PID"].map { Int32($0) == Syscall.processID() } ?? true
        let usec = environment["WATCHDOG_USEC"].flatMap(Double.init) ?? 0
        watchdogInterval = forUs && usec > 0 ? usec / 2e6 : nil
    }

    /// Sends `state` (e.g. `READY=1`); returns false when not run by systemd or the send failed.
    @discardableResult
    func notify(_ state: String) -> Bool {
        guard let socketPath else { return false }
        return (try? Syscall.sendDatagram(Array(state.utf8), toUnixSocket: socketPath).get()) != nil
    }
}
