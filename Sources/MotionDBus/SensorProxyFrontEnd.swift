import MotionHub
import NIOCore

/// iio-sensor-proxy's D-Bus interface as a part of the daemon: the service on the system bus
/// (`DBUS_SYSTEM_BUS_ADDRESS`, else the standard one), on its own thread, fed by a bridge that is a
/// client of the hub.
package final class SensorProxyFrontEnd: DaemonPart, @unchecked Sendable {
    // @unchecked: `service` is set by `start` and read by `stop`, one after the other.
    private let hub: Hub
    private var service: SensorProxyService?

    package var name: String { "D-Bus" }

    package init(hub: Hub) {
        self.hub = hub
    }

    package func start() throws {
        let hub = self.hub
        let bridge = NIOLoopBoundBox.makeEmptyBox(valueType: SensorProxyBridge.self, eventLoop: hub.eventLoop)
        let service = try SensorProxyService(logger: hub.logger) { sensor, claimed in
            hub.eventLoop.execute { bridge.value?.claimChanged(sensor, claimed: claimed) }
        }
        try hub.eventLoop.submit {
            let fed = SensorProxyBridge(hub: hub, service: service)
            fed.start()
            bridge.value = fed
        }.wait()
        service.start()
        self.service = service
        hub.logger.info("serving D-Bus", metadata: ["name": "\(SensorProxyInterface.busName)"])
    }

    package func stop() throws {
        service?.stop()
        service = nil
    }
}
