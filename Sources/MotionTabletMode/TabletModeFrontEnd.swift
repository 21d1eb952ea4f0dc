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
package final class TabletModeFrontEnd: DaemonPart, @unchecked Sendable {
    // @unchecked: `sink` is set by `start` and read by `stop`, one after the other; the sink itself
    // lives on the hub's loop.
    private let hub: Hub
    private let logger: Logger
    private let uinput: String
    private let sysRoot: String
    private var sink: Sink?

    package var name: String { "tablet mode switch" }

    /// `uinput`: the uinput device's path; `sysRoot`: where the kernel's input devices are listed.
    package init(hub: Hub, logger: Logger, uinput: String = "/dev/uinput", sysRoot: String = "/sys") {
        self.hub = hub
        self.logger = logger
        self.uinput = uinput
        self.sysRoot = sysRoot
    }

    package func start() throws {
        // No hinge (a display's and a base's accelerometer): no switch, not even one that stays off.
        let hasHinge = try hub.eventLoop.submit { [hub] in
            Set(hub.devices.filter { $0.kinds.contains(.accelerometer) }.map(\.location)).isSuperset(of: [.display, .base])
        }.wait()
        guard hasHinge else { return logger.info("tablet mode: no hinge (one accelerometer, or none)") }
        if TabletModeSwitch.kernelHasOne(sysRoot: sysRoot) {
            return logger.info("tablet mode: the kernel reports it already (an input device with SW_TABLET_MODE)")
        }
        let device: TabletModeSwitch
        do {
            device = try TabletModeSwitch(path: uinput)
        } catch {
            return logger.info("tablet mode: no switch of motiond's", metadata: ["reason": "\(error)"])
        }
        sink = try hub.eventLoop.submit { [hub, logger] in
            let sink = Sink(hub: hub, device: device, logger: logger)
            sink.start()
            return sink
        }.wait()
    }

    package func stop() throws {
        guard let sink else { return }
        try hub.eventLoop.submit { sink.stop() }.wait()
        self.sink = nil
    }

    /// Watches the hinge and the display's tilt on the hub's loop, and sets the switch.
    private final class Sink: MessageSink, @unchecked Sendable {
        // @unchecked: made, used and stopped on the hub's loop only.
        private let hub: Hub
        private let device: TabletModeSwitch
        private let logger: Logger
        private var id: Hub.ClientID?
        private var policy = TabletModePolicy()
        private var displayFlat = false

        init(hub: Hub, device: TabletModeSwitch, logger: Logger) {
            self.hub = hub
            self.device = device
            self.logger = logger
        }

        func start() {
            id = hub.connect(self)
            guard let id else { return logger.warning("tablet mode: the hub has no room for the switch's watch") }
            // The hinge's samples come as fast as the orientation's (4 a second): a fold is seen within 0.25 s.
            hub.handle(.watch(Request.Watch(streams: [.hinge, .tilt], interval: 0.25)), from: id)
        }

        func stop() {
            if let id { hub.disconnect(id) }
            id = nil
        }

        func receive(_ message: AnyServerMessage, line: () -> ByteBuffer?) {
            switch message {
            case .tilt(let tilt):
                displayFlat = tilt.tilt == .faceUp || tilt.tilt == .faceDown
            case .hinge(let hinge):
                guard let tablet = policy.update(angle: hinge.angle, displayFlat: displayFlat) else { return }
                do {
                    try device.set(tablet)
                    logger.notice("tablet mode \(tablet ? "on" : "off")", metadata: ["hinge": "\(Int(hinge.angle.rounded()))°"])
                } catch {
                    logger.warning("tablet mode: cannot set the switch", metadata: ["error": "\(error)"])
                }
            case .error(let error):
                // No hinge here (one accelerometer): nothing to switch from.
                logger.info("tablet mode: no hinge to follow", metadata: ["reason": "\(error.message)"])
                stop()
            default:
                break
            }
        }
    }
}
