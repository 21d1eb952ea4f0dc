import Foundation

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
        let forUs = environment["WATCHDOG_PID"].map { Int32($0) == getpid() } ?? true
        if forUs, let usec = environment["WATCHDOG_USEC"].flatMap(Double.init), usec > 0 {
            watchdogInterval = usec / 2e6
        } else {
            watchdogInterval = nil
        }
    }

    /// Sends `state` (e.g. `READY=1`); returns false when not run by systemd or the send failed.
    @discardableResult
    func notify(_ state: String) -> Bool {
        guard let socketPath else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(socketPath.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.enumerated() { raw[i] = byte }
            if path.first == UInt8(ascii: "@") { raw[0] = 0 }  // abstract namespace
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (path.first == UInt8(ascii: "@") ? 0 : 1))
        let bytes = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL), $0, length) }
        }
        return sent == bytes.count
    }
}
