import Logging
import MotionCore
import MotionDevices
import MotionFusion
import MotionHub
import MotionWire
import NIOCore

/// Tablet mode from the hinge, for convertibles whose kernel reports none: a `SW_TABLET_MODE`
/// switch of motiond's own (`TabletModeSwitch`, uinput), set from the hinge between the display's
/// and the base's accelerometers (`TabletModePolicy`). It starts only where it is needed: the
/// kernel has no such switch, `/dev/uinput` opens, and the machine has a hinge (the hub refuses a
/// `hinge` watch otherwise). While it runs, both accelerometers run too: the price of the switch.
///
/// A client of the hub that watches the hinge and the display's tilt and sets the switch.
package final class TabletModeFrontEnd: DaemonPart, MessageSink, @unchecked Sendable {
    // @unchecked: its state is used on the hub's loop only.
    private let hub: Hub
    private let logger: Logger
    private var device: TabletModeSwitch?
    private var id: Hub.ClientID?
    private var policy = TabletModePolicy()
    private var displayFlat = false

    package var name: String { "tablet mode switch" }

    package init(hub: Hub, logger: Logger) {
        self.hub = hub
        self.logger = logger
    }

    package func start() throws {
        // No hinge (a display's and a base's accelerometer): no switch, not even one that stays off.
        let hasHinge = try hub.eventLoop.submit { [hub] in
            Set(hub.devices.filter { $0.kinds.contains(.accelerometer) }.map(\.location)).isSuperset(of: [.display, .base])
        }.wait()
        guard hasHinge else { return logger.info("tablet mode: no hinge (one accelerometer, or none)") }
        if TabletModeSwitch.kernelHasOne() {
            return logger.info("tablet mode: the kernel reports it already (an input device with SW_TABLET_MODE)")
        }
        let device: TabletModeSwitch
        do {
            device = try TabletModeSwitch()
        } catch {
            return logger.info("tablet mode: no switch of motiond's", metadata: ["reason": "\(error)"])
        }
        try hub.eventLoop.submit { [self] in
            self.device = device
            id = hub.connect(self)
            guard let id else { return logger.warning("tablet mode: the hub has no room for the switch's watch") }
            // The hinge's samples come as fast as the orientation's (4 a second): a fold is seen within 0.25 s.
            hub.handle(.watch(Request.Watch(streams: [.hinge, .tilt], interval: 0.25)), from: id)
        }.wait()
    }

    package func stop() throws {
        try hub.eventLoop.submit { [self] in
            disconnect()
            device = nil  // uinput's device goes with it
        }.wait()
    }

    private func disconnect() {
        if let id { hub.disconnect(id) }
        id = nil
    }

    package func receive(_ message: AnyServerMessage, line: () -> ByteBuffer?) {
        switch message {
        case .tilt(let tilt):
            displayFlat = tilt.tilt == .faceUp || tilt.tilt == .faceDown
        case .hinge(let hinge):
            guard let device, let tablet = policy.update(angle: hinge.angle, displayFlat: displayFlat) else { return }
            do {
                try device.set(tablet)
                logger.notice("tablet mode \(tablet ? "on" : "off")", metadata: ["hinge": "\(Int(hinge.angle.rounded()))°"])
            } catch {
                logger.warning("tablet mode: cannot set the switch", metadata: ["error": "\(error)"])
            }
        case .error(let error):
            // No hinge here (one accelerometer): nothing to switch from.
            logger.info("tablet mode: no hinge to follow", metadata: ["reason": "\(error.message)"])
            disconnect()
        default:
            break
        }
    }
}
