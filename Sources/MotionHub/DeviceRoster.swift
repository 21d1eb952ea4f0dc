import Logging
import MotionCore
import MotionDevices

/// The devices of every origin (this machine's, then each remote's) as last listed, what each listing
/// skipped (logged once while it lasts), and who is told when they change. Confined to the hub's
/// event loop.
final class DeviceRoster {
    /// Every origin's devices: this machine's, then each remote's.
    private(set) var devices: [DeviceDescriptor] = []
    /// The last listing of each origin.
    private var listed: [DeviceOrigin: [DeviceDescriptor]] = [:]
    /// What the last listing of each origin skipped and why, as logged.
    private var reportedProblems: [DeviceOrigin: Set<String>] = [:]
    /// Told of every change of `devices` (the bridges: D-Bus's `Has…` properties, streams waiting for a sensor).
    private var observers: [([DeviceDescriptor]) -> Void] = []
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    /// Replaces `origin`'s devices with `listing`'s.
    func take(_ listing: DeviceListing, from origin: DeviceOrigin) {
        listed[origin] = listing.devices
        devices = listed.sorted { $0.key < $1.key }.flatMap(\.value)
        // Said once while it lasts: an unreachable board is listed again every 10 s, and a machine's
        // odd device at every udev event.
        let problems = listing.problems.map { "\($0)" }
        for problem in problems where reportedProblems[origin]?.contains(problem) != true {
            logger.warning("device skipped", metadata: ["reason": "\(problem)"])
        }
        reportedProblems[origin] = Set(problems)
    }

    /// Forgets a device whose capture said it is gone, before a listing does.
    func remove(_ number: DeviceNumber) {
        devices.removeAll { $0.number == number }
    }

    /// Calls `observer` at every change (`changed`).
    func observe(_ observer: @escaping ([DeviceDescriptor]) -> Void) {
        observers.append(observer)
    }

    /// Tells the observers of the devices now.
    func changed() {
        for observer in observers { observer(devices) }
    }
}
