import MotionHub

/// GeoClue as a part of the daemon: while a client watches motion in `xTrueNorthZVertical` and
/// motiond.conf gives neither a declination nor a location, the hub asks `GeoClueClient` where the
/// machine is, and the World Magnetic Model's declination there turns that frame. No GeoClue on the
/// bus, or one that refuses motiond, costs nothing more than a line in the journal.
package final class GeoClueFrontEnd: DaemonPart, @unchecked Sendable {
    // @unchecked: `client` is set by `start` and read by `stop`, one after the other.
    private let hub: Hub
    private var client: GeoClueClient?

    /// Its name in the daemon's log.
    package var name: String { "GeoClue" }

    /// A part that asks GeoClue for `hub`.
    package init(hub: Hub) {
        self.hub = hub
    }

    /// Connects to the system bus (no bus: a line in the journal, and no place) and tells the hub's
    /// need for a place to the client.
    package func start() throws {
        let hub = self.hub
        let client: GeoClueClient
        do {
            client = try GeoClueClient(logger: hub.logger) { place in hub.eventLoop.execute { hub.updateLocation(place) } }
        } catch {
            return hub.logger.notice("cannot ask GeoClue where the machine is", metadata: ["error": "\(error)"])
        }
        client.start()
        self.client = client
        try hub.eventLoop.submit { hub.observeLocationNeed { client.setLocationWanted($0) } }.wait()
    }

    /// Stops asking, tells GeoClue so, and closes the connection.
    package func stop() throws {
        try hub.eventLoop.submit { [hub] in hub.observeLocationNeed(nil) }.wait()
        client?.stop()
        client = nil
    }
}
