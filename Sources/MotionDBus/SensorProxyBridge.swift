import MotionCore
import MotionHub
import MotionDevices
import MotionWire
import NIOCore

/// Feeds iio-sensor-proxy's D-Bus interface, and motiond's posture and presence beside it (`SensorProxyService`),
/// from the hub: a client of the hub like any socket client, whose watches follow the D-Bus claims and
/// whose messages become the interfaces' properties. So the D-Bus side gets every rule of the socket
/// side (rates set by demand, sensors that come and go, `ENDED`) without a second path into the core.
///
/// Confined to the hub's event loop; claims come from the bus's thread through `claimChanged`.
final class SensorProxyBridge: MessageSink {
    private let hub: Hub
    private let service: SensorProxyService
    private var id: Hub.ClientID?
    /// The sensors claimed on D-Bus now.
    private var claimed: Set<ClaimBook.Sensor> = []
    /// The streams the hub sends us, as its last `WATCHING` said.
    private var watching: Set<StreamKind> = []
    private var values = SensorProxyInterface.Properties()
    /// The watches made again, per sensor, since its capture ended without its device going and
    /// before a value came: `RecoveryBackoff`, the captures' own, spaces them.
    private var rewatches: [ClaimBook.Sensor: Int] = [:]
    /// The sensors whose watch is to be made again (one task each, though each stream ends).
    private var rewatchDue: Set<ClaimBook.Sensor> = []
    /// The machine's sleeps the hub had seen when it last told the devices (`Hub.sleeps`):
    /// more at the next telling is a resume.
    private var sleepsSeen = 0

    /// The compass heading is rounded to this, degrees: finer than any compass, and noise below it
    /// does not wake the claimants.
    static let headingResolution = 0.1
    /// The compass is the fused heading, at this interval, s.
    static let compassInterval = 0.1
    /// The hinge angle is rounded to this, degrees: a hand steadying the lid does not wake the
    /// claimants, and the modes' boundaries are whole degrees.
    static let hingeResolution = 1.0
    /// The posture is the hinge's, at this interval, s: as the tablet-mode switch watches it, so that
    /// the two share the accelerometers' rate (4 a second: a fold is seen within 0.25 s).
    static let postureInterval = 0.25

    init(hub: Hub, service: SensorProxyService) {
        self.hub = hub
        self.service = service
    }

    /// Registers with the hub and publishes what the devices have; on the hub's loop.
    func start() {
        hub.eventLoop.preconditionInEventLoop()
        id = hub.connect(self)
        sleepsSeen = hub.sleeps
        hub.observeDevices { [unowned self] devices in devicesChanged(devices) }
        devicesChanged(hub.devices)
    }

    /// The streams a claim of `sensor` watches.
    static func streams(for sensor: ClaimBook.Sensor) -> [StreamKind] {
        switch sensor {
        case .accelerometer: [.orientation, .tilt]
        case .light: [.light]
        case .proximity: [.proximity]
        case .compass: [.motion]
        case .posture: [.hinge]
        case .presence: [.presence]
        }
    }

    /// A sensor's first claim (`true`) or last release (`false`) on D-Bus; on the hub's loop.
    func claimChanged(_ sensor: ClaimBook.Sensor, claimed isClaimed: Bool) {
        hub.eventLoop.preconditionInEventLoop()
        guard let id else { return }
        if isClaimed {
            claimed.insert(sensor)
            watch(sensor)
        } else {
            claimed.remove(sensor)
            rewatches[sensor] = nil
            hub.handle(.watch(.init(id: .string(sensor.rawValue), streams: Self.streams(for: sensor), enable: false)), from: id)
        }
    }

    private func watch(_ sensor: ClaimBook.Sensor) {
        guard let id else { return }
        guard isPresent(sensor, on: hub.devices) else { return service.markReady(sensor) }  // told when it appears
        let request = Request.Watch(
            id: .string(sensor.rawValue), streams: Self.streams(for: sensor),
            interval: sensor == .compass ? Self.compassInterval : sensor == .posture ? Self.postureInterval : nil,
            frame: sensor == .compass ? .xMagneticNorthZVertical : nil)
        hub.handle(.watch(request), from: id)
    }

    private func isPresent(_ sensor: ClaimBook.Sensor, on devices: [DeviceDescriptor]) -> Bool {
        let kinds = Set(devices.flatMap(\.kinds))
        switch sensor {
        case .accelerometer: return kinds.contains(.accelerometer)
        case .light: return kinds.contains(.light)
        case .proximity: return kinds.contains(.proximity)
        // The fused heading, or a sensor hub's own compass (iio-sensor-proxy's only compass).
        case .compass: return kinds.contains(.accelerometer) && (kinds.contains(.magnetometer) || kinds.contains(.compass))
        // A hinge: an accelerometer in the display and one in the base (the hub's `hinge` needs both).
        case .posture:
            return Set(devices.filter { $0.kinds.contains(.accelerometer) }.map(\.location)).isSuperset(of: [.display, .base])
        // The `presence` stream's sources: a human-presence sensor, else a proximity sensor.
        case .presence: return kinds.contains(.humanPresence) || kinds.contains(.proximity)
        }
    }

    /// Sets the `Has…` properties, and watches a claimed sensor that has just appeared. Called at
    /// start, at each listing of the devices, and after a resume (`Hub.resumed` tells the devices
    /// again): each claimant is then told every value it claimed, changed or not (`republish`).
    private func devicesChanged(_ devices: [DeviceDescriptor]) {
        // A resume, not a listing (a board's is made every 10 s): the hub counted a sleep since.
        let sleeps = hub.sleeps
        let resumed = sleeps != sleepsSeen
        sleepsSeen = sleeps
        values.hasAccelerometer = isPresent(.accelerometer, on: devices)
        values.hasAmbientLight = isPresent(.light, on: devices)
        values.hasProximity = isPresent(.proximity, on: devices)
        values.hasCompass = isPresent(.compass, on: devices)
        values.hasPosture = isPresent(.posture, on: devices)
        values.hasPresence = isPresent(.presence, on: devices)
        // The unit before the first reading (the readings then say theirs), following the sensor there is.
        let vendor = devices.contains { $0.sensors.contains { $0.kind == .light && $0.readsVendorUnits == true } }
        values.lightLevelUnit = (vendor ? LightMessage.Unit.vendor : .lux).rawValue
        let appeared = claimed.filter { isPresent($0, on: devices) && !watching.isSuperset(of: Self.streams(for: $0)) }
        // Before `Has…` is told: a client that claims as soon as it hears it (mutter's fix of #4931)
        // waits for the first value rather than read the one from before the sensor was there.
        for sensor in appeared { service.markPending(sensor) }
        service.publish(values)
        if resumed { service.republish() }
        for sensor in appeared { watch(sensor) }
        // A claimed sensor that went: its claims return at once, as on a machine without it, and stay
        // counted, so that it is served when it comes back (upstream drops them).
        for sensor in claimed where !isPresent(sensor, on: devices) { service.markReady(sensor) }
    }

    /// A claimed sensor's stream ended (its capture ended): watched again while its device is there,
    /// after `RecoveryBackoff`'s wait; claims made meanwhile wait for its first value.
    private func streamEnded(_ stream: StreamKind) {
        watching.remove(stream)
        for sensor in claimed where Self.streams(for: sensor).contains(stream) && isPresent(sensor, on: hub.devices) {
            guard rewatchDue.insert(sensor).inserted else { continue }
            let attempt = rewatches[sensor, default: 0] + 1
            rewatches[sensor] = attempt
            service.markPending(sensor)
            let bridge = NIOLoopBound(self, eventLoop: hub.eventLoop)
            hub.eventLoop.scheduleTask(in: .nanoseconds(Int64(RecoveryBackoff.delay(beforeAttempt: attempt) * 1e9))) {
                bridge.value.rewatch(sensor, attempt: attempt)
            }
        }
    }

    private func rewatch(_ sensor: ClaimBook.Sensor, attempt: Int) {
        rewatchDue.remove(sensor)
        guard claimed.contains(sensor), !watching.isSuperset(of: Self.streams(for: sensor)) else { return }
        // Gone meanwhile: the listing that says so answered its claims, and its return watches it.
        guard isPresent(sensor, on: hub.devices) else { return service.markReady(sensor) }
        hub.logger.notice("D-Bus claim watches its sensor again", metadata: ["sensor": "\(sensor.rawValue)", "attempt": "\(attempt)"])
        watch(sensor)
    }

    // MARK: MessageSink: what the hub sends, as values

    func receive(_ message: AnyServerMessage, line: () -> ByteBuffer?) {
        switch message {
        case .orientation(let message):
            // Upstream has no face-up or face-down: lying flat keeps the orientation it had.
            if message.orientation != .faceUp && message.orientation != .faceDown {
                values.accelerometerOrientation = message.orientation.rawValue
            }
            publish(ready: .accelerometer)
        case .tilt(let message):
            values.accelerometerTilt = message.tilt.rawValue
            service.publish(values)
        case .light(let message):
            values.lightLevel = message.illuminance
            values.lightLevelUnit = message.unit.rawValue
            publish(ready: .light)
        case .proximity(let message):
            values.proximityNear = message.near
            publish(ready: .proximity)
        case .motion(let message):
            guard let heading = message.heading else { return }
            let rounded = (heading / Self.headingResolution).rounded() * Self.headingResolution
            values.compassHeading = rounded >= 360 ? 0 : rounded
            publish(ready: .compass)
        case .hinge(let message):
            values.posture = message.mode.rawValue
            values.hingeAngle = (message.angle / Self.hingeResolution).rounded() * Self.hingeResolution
            publish(ready: .posture)
        case .presence(let message):
            values.presence = message.present ? "present" : "absent"
            // A value without attention is from a sensor without the channel: it says so.
            values.hasAttention = message.attention != nil
            values.attention = message.attention.map { $0 ? "attentive" : "inattentive" } ?? "undefined"
            values.presenceDistance = message.distance ?? -1
            publish(ready: .presence)
        case .watching(let message):
            watching = Set(message.streams.map(\.stream))
        case .error(let error):
            // A watch the hub refused (its sensor went away meanwhile): the claim returns now, and the
            // sensor is watched when it appears.
            guard case .string(let name)? = error.id, let sensor = ClaimBook.Sensor(rawValue: name) else { return }
            hub.logger.notice("D-Bus claim waits for its sensor", metadata: ["sensor": "\(name)", "reason": "\(error.message)"])
            service.markReady(sensor)
        case .ended(let ended):
            streamEnded(ended.stream)
        default:
            break  // nothing for D-Bus, which watches only the streams above (a new stream is none)
        }
    }

    private func publish(ready sensor: ClaimBook.Sensor) {
        rewatches[sensor] = nil
        service.publish(values)
        service.markReady(sensor)
    }
}
