import MotionHub
import NIOCore

/// logind's sleeps as a part of the daemon, always on (systemd's logind or elogind, whether or not
/// the D-Bus drop-in serves): `LogindSleep` holds a delay lock on sleep and tells the hub, on its
/// loop, that the machine is about to sleep (`Hub.prepareForSleep`, whose end lets logind go) and
/// that it resumed (`Hub.resumed`). No system bus, or no logind on it, costs a line in the journal
/// (docs/sleep.md); a bus missing at start or lost later is connected to again, with a back-off.
package final class SleepFrontEnd: DaemonPart, @unchecked Sendable {
    // @unchecked: `logind` is set by `start` and read by `stop`, one after the other.
    private let hub: Hub
    /// The bus followed, a D-Bus address (`unix:path=…`); nil: the system bus.
    private let address: String?
    private var logind: LogindSleep?

    /// Its name in the daemon's log.
    package var name: String { "sleep" }

    /// A part that follows logind's sleeps on the bus at `address` (nil: the system bus) for `hub`.
    package init(hub: Hub, address: String? = nil) {
        self.hub = hub
        self.address = address
    }

    /// Starts following logind on its own thread, which connects to the bus, without waiting for either.
    package func start() throws {
        let hub = self.hub
        let logind: LogindSleep
        do {
            logind = try LogindSleep(
                address: address, logger: hub.logger,
                preparing: { quiesced in
                    hub.eventLoop.execute {
                        hub.prepareForSleep().whenComplete { result in
                            if case .failure(let error) = result {
                                hub.logger.warning("the sensors could not all be closed before sleep", metadata: ["error": "\(error)"])
                            }
                            quiesced()
                        }
                    }
                },
                resumed: { hub.eventLoop.execute { hub.resumed() } })
        } catch {
            // Only the thread's eventfd can fail here (the process is out of descriptors): the bus
            // itself is connected to, and again, by the thread.
            return hub.logger.error("cannot follow logind's sleeps", metadata: ["error": "\(error)"])
        }
        logind.start()
        self.logind = logind
    }

    /// Lets the lock go and stops following logind, at once.
    package func stop() throws {
        logind?.stop()
        logind = nil
    }
}
