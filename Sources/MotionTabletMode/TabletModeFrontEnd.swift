import Logging
import MotionCore
import MotionDevices
import MotionFusion
import MotionHub
import MotionWire
import NIOCore

/// Tablet mode from the hinge, for convertibles whose kernel reports none: a `SW_TABLET_MODE`
/// switch of motiond's own (`TabletModeSwitch`, uinput), set from the hinge between the display's
/// and the base's accelerometers (`TabletModePolicy`). The switch is made only where it is needed:
/// the kernel has no such switch, `/dev/uinput` opens, and the machine has a hinge (a display's and a
/// base's accelerometer). While it runs, both accelerometers run too: the price of the switch.
///
/// A client of the hub that watches the hinge and the display's tilt and sets the switch. Sensors
/// come and go: it follows the hub's devices (as the D-Bus bridge does), so that a base that comes
/// late makes the switch then, and one plugged back in is watched again; a watch the hub ends
/// (`ENDED`: a sensor removed, or failing) or refuses, or a connection the hub refuses (its
/// `maximumClients` reached), is asked for again after `rewatchDelay`, doubling up to
/// `longestRewatchDelay` while it keeps failing; meanwhile the switch is off (the
/// keyboard works), and the hinge decides afresh once it is back. Every wait is on the hub's loop,
/// so a test that moves the loop's clock moves them too.
package final class TabletModeFrontEnd: DaemonPart, MessageSink, @unchecked Sendable {
    // @unchecked: its state is used on the hub's loop only.
    private let hub: Hub
    private let logger: Logger
    private let switches: TabletModeSwitches
    private var device: (any TabletModeSwitching)?
    /// Its client id, taken only while the machine has a hinge: a part that watches nothing is no
    /// client (STATUS counts it, and it would take one of `maximumClients`).
    private var id: Hub.ClientID?
    /// Between start and stop: the hub keeps its device observers for good.
    private var following = false
    private var policy = TabletModePolicy()
    private var displayFlat = false
    /// The streams the hub sends us, as its last `WATCHING` said.
    private var watching: Set<StreamKind> = []
    private var rewatch: Scheduled<Void>?
    private var nextRewatchDelay = TabletModeFrontEnd.rewatchDelay
    /// Said once while it lasts: why there is no switch, and that writing it fails.
    private var saidNoSwitch: String?
    private var saidWriteFails = false
    /// Said once while it lasts: the hub refused the switch's connection (`maximumClients` reached).
    private var saidNoRoom = false

    /// The streams it watches, and their interval, s: the hinge's samples come as fast as the
    /// orientation's (4 a second), so a fold is seen within 0.25 s.
    static let streams: Set<StreamKind> = [.hinge, .tilt]
    static let interval = 0.25
    /// The first wait before a watch that ended is asked for again: a sensor's failing reads end its
    /// capture within about a second, and a second later it is opened anew.
    static let rewatchDelay = TimeAmount.seconds(1)
    /// The longest wait between asks while the watch keeps ending (a base that always fails).
    static let longestRewatchDelay = TimeAmount.seconds(32)

    package var name: String { "tablet mode switch" }

    /// A front end that sets the switch `switches` makes (uinput's, unless a test gives another).
    package init(hub: Hub, logger: Logger, switches: TabletModeSwitches = .uinput) {
        self.hub = hub
        self.logger = logger
        self.switches = switches
    }

    package func start() throws {
        if switches.kernelHasOne() {
            return logger.info("tablet mode: the kernel reports it already (an input device with SW_TABLET_MODE)")
        }
        try hub.eventLoop.submit { [self] in
            following = true
            // Weak: the hub keeps its observers for good, and this part may stop before it.
            hub.observeDevices { [weak self] devices in self?.follow(devices) }
            follow(hub.devices)
        }.wait()
    }

    package func stop() throws {
        try hub.eventLoop.submit { [self] in
            rewatch?.cancel()
            rewatch = nil
            following = false
            if let id { hub.disconnect(id) }
            id = nil
            device = nil  // uinput's device goes with it
        }.wait()
    }

    /// Makes the switch and watches the hinge where the devices have one; else waits for them to.
    private func follow(_ devices: [DeviceDescriptor]) {
        guard following else { return }
        let accelerometers = Set(devices.filter { $0.kinds.contains(.accelerometer) }.map(\.location))
        // No hinge: no switch, not even one that stays off (libinput would take the machine for a convertible).
        guard accelerometers.isSuperset(of: [.display, .base]) else {
            return sayNoSwitch("no hinge (one accelerometer, or none): waiting for a display's and a base's")
        }
        if device == nil {
            do {
                device = try switches.make()
            } catch {
                // Tried again at the next change of the devices.
                return sayNoSwitch("no switch of motiond's: \(error)")
            }
            logger.info("tablet mode: switch made; following the hinge")
        }
        saidNoSwitch = nil
        if id == nil {
            id = hub.connect(self)
            guard id != nil else {
                // Asked again after the same capped backoff as a watch that ended: clients that
                // leave change no device, so waiting for the next change could wait for good.
                if !saidNoRoom { logger.warning("tablet mode: the hub has no room for the switch's watch; asking again in a while") }
                saidNoRoom = true
                return askAgainLater()
            }
            saidNoRoom = false
        }
        guard !watching.isSuperset(of: Self.streams), let id else { return }
        rewatch?.cancel()
        rewatch = nil
        hub.handle(.watch(Request.Watch(streams: Array(Self.streams), interval: Self.interval)), from: id)
    }

    private func sayNoSwitch(_ reason: String) {
        guard saidNoSwitch != reason else { return }
        saidNoSwitch = reason
        logger.info("tablet mode: \(reason)")
    }

    /// Asks for the watch (and the connection, if the hub had no room for it) again once
    /// `nextRewatchDelay` has passed, unless already due; scheduled, never asked for at once: the hub
    /// is in the middle of a delivery when it ends or refuses one.
    private func askAgainLater() {
        guard following, rewatch == nil else { return }
        let delay = nextRewatchDelay
        nextRewatchDelay = min(delay * 2, Self.longestRewatchDelay)
        rewatch = hub.eventLoop.scheduleTask(in: delay) { [weak self] in
            guard let self else { return }
            rewatch = nil
            follow(hub.devices)
        }
    }

    /// Sets the switch to what the policy wants, if it holds another state: at every hinge sample
    /// and every loss of the hinge until a write succeeds. Only a change the switch took is logged,
    /// with `why` after its state.
    private func applyPolicy(_ why: String = "", metadata: Logger.Metadata) {
        guard let device, device.isOn != policy.isTablet else { return }
        do {
            try device.set(policy.isTablet)
            saidWriteFails = false
            logger.notice("tablet mode \(device.isOn ? "on" : "off")\(why)", metadata: metadata)
        } catch {
            if !saidWriteFails { logger.warning("tablet mode: cannot set the switch; trying again", metadata: ["error": "\(error)"]) }
            saidWriteFails = true
        }
    }

    /// The hinge can no longer be followed (its stream ended or was refused): the switch goes off,
    /// since a keyboard that works is the safe failure, and the policy starts afresh, so that the
    /// first angle once the hinge is back decides.
    private func loseTheHinge(because reason: String) {
        policy = TabletModePolicy()
        applyPolicy(": the hinge cannot be followed", metadata: ["reason": "\(reason)"])
    }

    package func receive(_ message: AnyServerMessage, line: () -> ByteBuffer?) {
        switch message {
        case .tilt(let tilt):
            displayFlat = tilt.tilt == .faceUp || tilt.tilt == .faceDown
        case .hinge(let hinge):
            nextRewatchDelay = Self.rewatchDelay  // the watch serves again
            _ = policy.update(angle: hinge.angle, displayFlat: displayFlat)
            applyPolicy(metadata: ["hinge": "\(Int(hinge.angle.rounded()))°"])
        case .watching(let message):
            watching = Set(message.streams.map(\.stream))
        case .ended(let ended):
            watching.remove(ended.stream)
            logger.info("tablet mode: the hub ended the \(ended.stream.rawValue) stream; asking again in a while", metadata: ["reason": "\(ended.reason)"])
            if ended.stream == .hinge { loseTheHinge(because: ended.reason) }
            askAgainLater()
        case .error(let error):
            // Refused (the base went away meanwhile): asked again later, and when the devices change.
            logger.info("tablet mode: the hinge cannot be watched now", metadata: ["reason": "\(error.message)"])
            loseTheHinge(because: error.message)
            askAgainLater()
        default:
            break
        }
    }
}

/// The switch the front end sets: on is tablet mode. uinput's `TabletModeSwitch` is the one the
/// daemon makes; a test gives one that records what it is set to.
package protocol TabletModeSwitching: AnyObject {
    /// Whether the switch is on (tablet mode), as last set.
    var isOn: Bool { get }
    /// Sets the switch, writing only a change; throws what failed, the switch keeping its state.
    func set(_ on: Bool) throws(DeviceError)
}

extension TabletModeSwitch: TabletModeSwitching {}

/// Where the front end's switch comes from: whether the kernel reports tablet mode itself (then none
/// is made), and how one is made (off, gone when released).
package struct TabletModeSwitches: Sendable {
    /// Whether an input device of the kernel's reports `SW_TABLET_MODE` already.
    package var kernelHasOne: @Sendable () -> Bool
    /// Makes a switch, off; throws why there can be none (uinput's: `DeviceError.uinputFailed`).
    package var make: @Sendable () throws -> any TabletModeSwitching

    /// Each part given: a test's.
    package init(kernelHasOne: @escaping @Sendable () -> Bool, make: @escaping @Sendable () throws -> any TabletModeSwitching) {
        (self.kernelHasOne, self.make) = (kernelHasOne, make)
    }

    /// The daemon's: the kernel's input devices under /sys, and a uinput device through `/dev/uinput`.
    package static let uinput = TabletModeSwitches(kernelHasOne: { TabletModeSwitch.kernelHasOne() }, make: { try TabletModeSwitch() })
}
