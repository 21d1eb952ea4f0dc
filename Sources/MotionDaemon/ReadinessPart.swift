import MotionHub

/// Tells systemd the daemon is ready (`READY=1`, `Type=notify`) once every part before it has
/// started, and that it is stopping (`STOPPING=1`) before they stop: it comes after the front ends
/// (only the watchdog follows it).
final class ReadinessPart: DaemonPart {
    private let notifier: SystemdNotifier
    private let hub: Hub
    private let socketPath: String

    var name: String { "readiness" }

    init(notifier: SystemdNotifier, hub: Hub, socketPath: String) {
        (self.notifier, self.hub, self.socketPath) = (notifier, hub, socketPath)
    }

    func start() throws {
        let devices = try hub.eventLoop.submit { [hub] in hub.devices.count }.wait()
        notifier.notify("READY=1\nSTATUS=serving \(devices) sensor devices on \(socketPath)")
    }

    func stop() throws {
        notifier.notify("STOPPING=1")
    }
}
