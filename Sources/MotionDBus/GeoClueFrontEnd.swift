import MotionHub
import MotionSystem
import NIOCore
import Synchronization

/// GeoClue as a part of the daemon: while a client watches motion in `xTrueNorthZVertical` and
/// motiond.conf gives neither a declination nor a location, the hub asks `GeoClueClient` where the
/// machine is, and the World Magnetic Model's declination there turns that frame. No GeoClue on the
/// bus, or one that refuses motiond, costs nothing more than a line in the journal.
///
/// The client, its connection and its thread exist only while a place is wanted, and for `linger`
/// after: a daemon at rest keeps no GeoClue thread (issue 63: four threads at rest), and a watch
/// that comes and goes again and again reuses one connection rather than asking GeoClue for a new
/// client each time (a GeoClue started by each `GetClient` would be activated in a loop).
package final class GeoClueFrontEnd: DaemonPart, Sendable {
    /// How long the client stays after the last true-north watch ended (it has told GeoClue `Stop` at once).
    static let linger = Int64(60_000_000_000)

    private struct Need {
        var wanted = false
        /// When the place stopped being wanted, monotonic ns.
        var unwantedSince: Int64 = 0
        /// Whether a thread brings the client to the need (`settle`).
        var settling = false
        /// Whether the part stopped: no client is made any more.
        var stopped = false
        /// Whether there is a client (as the last `settle` left it).
        var hasClient = false
    }

    private let hub: Hub
    private let need = Mutex(Need())
    /// The client, while there is one; held while one is made or stopped, so that those never overlap.
    private let client = Mutex<GeoClueClient?>(nil)

    /// Its name in the daemon's log.
    package var name: String { "GeoClue" }

    /// A part that asks GeoClue for `hub`, on the system bus.
    package init(hub: Hub) {
        self.hub = hub
    }

    /// Follows the hub's need for a place; connects only when a place is wanted.
    package func start() throws {
        try hub.eventLoop.submit { [hub] in hub.observeLocationNeed { [weak self] wanted in self?.placeWanted(wanted) } }.wait()
    }

    /// Stops asking, tells GeoClue so, and closes the connection.
    package func stop() throws {
        try hub.eventLoop.submit { [hub] in hub.observeLocationNeed(nil) }.wait()
        need.withLock { $0.stopped = true }
        client.withLock { $0.take() }?.stop()
    }

    /// On the hub's loop (which never waits for the client's lock: a stop holds it while the client
    /// says goodbye): the place is wanted, or no longer.
    private func placeWanted(_ wanted: Bool) {
        let hasClient = need.withLock { need in
            need.wanted = wanted
            if !wanted { need.unwantedSince = Syscall.monotonicNanoseconds() }
            return need.hasClient
        }
        guard wanted || hasClient else { return }
        // GeoClue is told to stop at once; the connection goes once it has lingered.
        if !wanted { hub.eventLoop.scheduleTask(in: .nanoseconds(Self.linger)) { [weak self] in self?.settle() } }
        settle()
    }

    /// Brings the client to the need off the loop (connecting may wait for the bus), on one thread at a time.
    private func settle() {
        let starts = need.withLock { need in
            defer { need.settling = true }
            return !need.settling && !need.stopped
        }
        guard starts else { return }
        if OSThread.startDetached(name: "geoclue start", body: { [self] in settleUntilSteady() }) != nil {
            need.withLock { $0.settling = false }
        }
    }

    private func settleUntilSteady() {
        while true {
            let (wanted, stopped, lingered) = need.withLock { need in
                (need.wanted, need.stopped, Syscall.monotonicNanoseconds() - need.unwantedSince >= Self.linger)
            }
            let hasClient = client.withLock { client in
                switch (wanted && !stopped, client) {
                case (true, nil):
                    client = connect()
                    client?.setLocationWanted(true)
                case (true, let client?):
                    client.setLocationWanted(true)
                case (false, let present?) where lingered || stopped:
                    present.stop()
                    client = nil
                case (false, let present?):
                    present.setLocationWanted(false)
                case (false, nil):
                    break
                }
                return client != nil
            }
            // A need that changed meanwhile is settled in turn; otherwise the next change starts a thread.
            let changed = need.withLock { need in
                need.hasClient = hasClient
                let changed = need.wanted != wanted || need.stopped != stopped
                if !changed { need.settling = false }
                return changed
            }
            guard changed else { return }
        }
    }

    /// A started client, or nil (no bus: a line in the journal, and no place).
    private func connect() -> GeoClueClient? {
        let hub = self.hub
        do {
            let client = try GeoClueClient(logger: hub.logger) { place in hub.eventLoop.execute { hub.updateLocation(place) } }
            client.start()
            return client
        } catch {
            hub.logger.notice("cannot ask GeoClue where the machine is", metadata: ["error": "\(error)"])
            return nil
        }
    }
}
