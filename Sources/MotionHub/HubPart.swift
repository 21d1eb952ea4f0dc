import MotionDevices
import NIOCore

/// The hub core as a part of the daemon: lists this machine's devices at start and follows them as
/// they come and go (udev's hot-plug), lists other machines' off the start path and every so often,
/// has the hub save the calibration every `stateSaveInterval` seconds while sensors run; at stop,
/// closes every sensor and saves the calibration.
package final class HubPart: DaemonPart, @unchecked Sendable {
    // @unchecked: `monitor` and `remoteListers` are set by `start` and read by
    // `stop`, which the daemon's start order calls one after the other.
    package let hub: Hub
    private let stateSaveInterval: Double
    private var monitor: DeviceMonitor?
    private var remoteListers: [RemoteLister] = []

    package var name: String { "hub" }

    /// - Parameter stateSaveInterval: seconds between saves of the calibration while the fusion runs.
    package init(hub: Hub, stateSaveInterval: Double) {
        self.hub = hub
        self.stateSaveInterval = stateSaveInterval
    }

    package func start() throws {
        let hub = self.hub
        let listing = Result { try hub.source.listDevices() }  // off the loop: it blocks
        let interval = TimeAmount.nanoseconds(Int64(stateSaveInterval * 1e9))
        try hub.eventLoop.submit {
            hub.apply(listing)
            hub.savesState(every: interval)
        }.wait()
        if hub.source.followsHotPlug { followHotPlug() }
        remoteListers = hub.source.remotes.enumerated().map { index, remote in
            RemoteLister(hub: hub, remote: remote, origin: .remote(index), interval: hub.source.relistInterval)
        }
        for lister in remoteListers { lister.start() }
    }

    /// Follows devices as they come and go (the monitor's thread sleeps until udev says something).
    private func followHotPlug() {
        let hub = self.hub
        do {
            let monitor = try DeviceMonitor()
            self.monitor = monitor
            // Handed from the monitor's own thread to the event loop: no Swift concurrency thread in
            // between, so a busy cooperative pool cannot hold a hot-plug back.
            let failure = monitor.start { result in
                switch result {
                case .success(let change):
                    hub.logger.info("device \(change.action)", metadata: ["device": "\(change.device)"])
                    // Listed here, on the monitor's thread: discovery blocks, the event loop must not.
                    let listing = Result { try hub.source.listDevices() }
                    hub.eventLoop.execute { hub.apply(listing) }
                case .failure(let error):
                    hub.logger.error("stopped following devices (hot-plug off until restart)", metadata: ["error": "\(error)"])
                }
            }
            if let failure { throw failure }
        } catch {
            hub.logger.error("cannot follow devices (hot-plug off)", metadata: ["error": "\(error)"])
        }
    }

    package func stop() throws {
        monitor?.stop()
        monitor = nil
        for lister in remoteListers { lister.stop() }
        remoteListers = []
        try hub.eventLoop.submit { [hub] in hub.stopAll() }.wait()
        hub.offLoop.waitUntilDone()
    }
}
