import MotionHub

/// GeoClue as a part of the daemon: while a client watches motion in `xTrueNorthZVertical` and
/// motiond.conf gives neither a declination nor a location, the hub asks `GeoClueClient` where the
/// machine is, and the World Magnetic Model's declination there turns that frame. No GeoClue on the
/// bus, or one that refuses motiond, costs nothing more than a line in the journal.
package final class GeoClueFrontEnd: DaemonPart, @unchecked Sendable {
    // @unchecked: `client` is set by `start` and read by `stop`, one after the other.
    private let hub: Hub
    private var client: GeoClueClient?

    package var name: String { "GeoClue" }

    package init(hub: Hub) {
        self.hub = hub
    }

    package func start() throws {
        let hub = self.hub
        let client: GeoClueClient
        do {
            client = try GeoClueClient(logger: hub.logger) { place in hub.eventLoop.execute { hub.located(place) } }
        } catch {
            return hub.logger.notice("cannot ask GeoClue where the machine is", metadata: ["error": "\(error)"])
        }
        client.start()
        self.client = client
        try hub.eventLoop.submit { hub.observeLocationNeed { client.want($0) } }.wait()
    }

    package func stop() throws {
        try hub.eventLoop.submit { [hub] in hub.observeLocationNeed(nil) }.wait()
        client?.stop()
        client = nil
    }
}
