import MotionHub
import NIOCore

/// systemd's watchdog as a part of the daemon: `WATCHDOG=1` at half of `WatchdogSec=`, sent from the
/// hub's event loop itself, so that a stuck loop stops the pings and systemd restarts the daemon.
/// Nothing when the unit has no watchdog.
final class WatchdogPart: DaemonPart, @unchecked Sendable {
    // @unchecked: `pings` is set by `start` and read by `stop`, one after the other.
    private let notifier: SystemdNotifier
    private let eventLoop: any EventLoop
    private var pings: RepeatedTask?

    var name: String { "watchdog" }

    init(notifier: SystemdNotifier, eventLoop: any EventLoop) {
        self.notifier = notifier
        self.eventLoop = eventLoop
    }

    func start() throws {
        guard let interval = notifier.watchdogInterval else { return }
        pings = eventLoop.scheduleRepeatedTask(initialDelay: .zero, delay: .nanoseconds(Int64(interval * 1e9))) { [notifier] _ in
            notifier.notify("WATCHDOG=1")
        }
    }

    func stop() throws {
        pings?.cancel()
        pings = nil
    }
}
