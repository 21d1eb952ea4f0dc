import MotionHub
import NIOCore
import Synchronization

/// iio-sensor-proxy's D-Bus interface as a part of the daemon: the service on the system bus
/// (`DBUS_SYSTEM_BUS_ADDRESS`, else the standard one), on its own thread, fed by a bridge that is a
/// client of the hub.
package final class SensorProxyFrontEnd: DaemonPart, Sendable {
    /// How long `start` waits for the bus to give motiond `net.hadess.SensorProxy`, s: a bus that
    /// has not answered by then holds the daemon's start no longer (the name is taken when it does),
    /// and systemd's start and stop timeouts are 90 s.
    static let namePatience = 10.0

    private let hub: Hub
    /// The bus served, a D-Bus address (`unix:path=…`); nil: the system bus.
    private let address: String?
    /// The service, from the moment `start` makes it (so that `interruptStart` reaches it) until `stop`.
    private let service = Mutex<SensorProxyService?>(nil)
    private let interrupted = Atomic<Bool>(false)
    /// The bus's refusal of the name after `start` (the bus answered after `namePatience`), for `failure`.
    private let refusals = AsyncStream<any Error>.makeStream()

    package var name: String { "D-Bus" }

    package init(hub: Hub, address: String? = nil) {
        self.hub = hub
        self.address = address
    }

    /// Serves the interface and waits, at most `namePatience` or until `interruptStart`, for the name;
    /// throws when another program owns it.
    package func start() throws {
        let hub = self.hub
        let bridge = NIOLoopBoundBox.makeEmptyBox(valueType: SensorProxyBridge.self, eventLoop: hub.eventLoop)
        let service = try SensorProxyService(
            address: address, logger: hub.logger,
            demand: { sensor, claimed in hub.eventLoop.execute { bridge.value?.claimChanged(sensor, claimed: claimed) } },
            refused: { [refusals] error in refusals.continuation.yield(error) })
        self.service.withLock { $0 = service }
        try hub.eventLoop.submit {
            let fed = SensorProxyBridge(hub: hub, service: service)
            fed.start()
            bridge.value = fed
        }.wait()
        service.start()
        if interrupted.load(ordering: .acquiring) { service.interruptWaiting() }
        do {
            if try !service.waitUntilNamed(seconds: Self.namePatience) && !interrupted.load(ordering: .acquiring) {
                hub.logger.warning("the system bus has not answered in \(Int(Self.namePatience)) s: D-Bus is served once it does (and motiond ends if another program owns the name)")
            }
        } catch {
            service.stop()
            self.service.withLock { $0 = nil }
            throw error
        }
    }

    /// The bus's refusal of the name when it comes after `start` returned (a refusal within the wait
    /// fails the start): another program serves `net.hadess.SensorProxy`, and the daemon ends with
    /// that error rather than run on without D-Bus.
    package func failure() async -> (any Error)? {
        for await error in refusals.stream { return error }
        return nil
    }

    /// Makes a `start` waiting for the bus return at once.
    package func interruptStart() {
        interrupted.store(true, ordering: .releasing)
        service.withLock { $0 }?.interruptWaiting()
    }

    package func stop() throws {
        service.withLock { $0 }?.stop()
        service.withLock { $0 = nil }
    }
}
