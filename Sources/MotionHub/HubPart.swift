import MotionDevices
import NIOCore

/// The hub core as a part of the daemon: lists the devices at start and follows them as they come
/// and go (udev's hot-plug, or a listing every so often for another machine's), saves the calibration
/// every `stateSaveInterval` seconds; at stop, closes every sensor and saves the calibration.
package final class HubPart: DaemonPart, @unchecked Sendable {
    // @unchecked: `monitor` and `periodicTasks` are set by `start` and read by `stop`, which the
    // daemon's start order calls one after the other.
    package let hub: Hub
    private let stateSaveInterval: Double
    private var monitor: DeviceMonitor?
    /// Cancelled at stop, before it waits for the work they started off the loop.
    private var periodicTasks: [RepeatedTask] = []

    package var name: String { "hub" }

    /// - Parameter stateSaveInterval: seconds between saves of the calibration while the fusion runs.
    package init(hub: Hub, stateSaveInterval: Double) {
        self.hub = hub
        self.stateSaveInterval = stateSaveInterval
    }

    package func start() throws {
        let hub = self.hub
        let listing = Result { try hub.source.listDevices() }  // off the loop: it blocks
        try hub.eventLoop.submit { hub.apply(listing) }.wait()
        let interval = TimeAmount.nanoseconds(Int64(stateSaveInterval * 1e9))
        let save = hub.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in hub.saveState() }
        periodicTasks.append(save)
        if hub.source.followsHotPlug { followHotPlug() }
        if let interval = hub.source.relistInterval { relist(every: interval) }
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

    /// Lists the devices again every `interval` seconds, off the loop (another machine's devices: a
    /// board that comes back, or one that went away).
    private func relist(every interval: Double) {
        let hub = self.hub
        let every = TimeAmount.nanoseconds(Int64(interval * 1e9))
        // Scheduled again once a listing is done: one that waits for an unreachable host must not pile up.
        periodicTasks.append(hub.eventLoop.scheduleRepeatedAsyncTask(initialDelay: every, delay: every) { _ in
            let listed = hub.eventLoop.makePromise(of: Void.self)
            hub.offLoop.run({ try hub.source.listDevices() }, then: { listing in
                hub.apply(listing)
                listed.succeed()
            })
            return listed.futureResult
        })
    }

    package func stop() throws {
        monitor?.stop()
        monitor = nil
        let periodicTasks = self.periodicTasks
        self.periodicTasks = []
        try hub.eventLoop.submit { [hub] in
            for task in periodicTasks { task.cancel() }
            hub.stopAll()
        }.wait()
        hub.waitForOffLoopWork()
    }
}
