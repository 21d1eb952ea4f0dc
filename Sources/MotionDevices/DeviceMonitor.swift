import CLibUdev
import MotionCore
import MotionSystem

/// A change to the set of IIO devices, as udev reports it.
public struct DeviceChange: Sendable, Hashable {
    /// What happened.
    public enum Action: String, Sendable, Hashable {
        /// A device appeared (plugged in, driver loaded).
        case added
        /// A device went away.
        case removed
        /// A device's properties changed (udev `change`, e.g. a new hwdb entry).
        case changed
    }

    /// What happened.
    public var action: Action
    /// Which device.
    public var device: DeviceNumber
    /// Its sysfs path.
    public var syspath: String
}

/// Follows IIO devices as they come and go, through a libudev monitor on the `iio` subsystem.
///
/// `start(handler:)` delivers each add, remove and change as it happens; while nothing happens the
/// monitor's thread sleeps in `poll` with no timeout (no wake-ups).
public final class DeviceMonitor: @unchecked Sendable {
    // @unchecked: udev and monitor pointers are touched only by the monitor thread after start;
    // `stop()` only wakes and joins that thread.
    private let udev: Udev
    private let monitor: OpaquePointer
    private let thread: WakeableThread

    /// Starts listening for udev events of the `iio` subsystem.
    public init() throws(DeviceError) {
        udev = try Udev()
        // "udev": events after udev's rules have run, so hwdb properties are already attached.
        guard let monitor = udev_monitor_new_from_netlink(udev.pointer, "udev") else {
            throw .udevFailed(operation: "udev_monitor_new_from_netlink", errno: currentErrno())
        }
        self.monitor = monitor
        _ = udev_monitor_filter_add_match_subsystem_devtype(monitor, "iio", nil)
        let status = udev_monitor_enable_receiving(monitor)
        guard status >= 0 else {
            udev_monitor_unref(monitor)
            throw .udevFailed(operation: "udev_monitor_enable_receiving", errno: -status)
        }
        do {
            thread = try WakeableThread(name: "udev monitor")
        } catch {
            udev_monitor_unref(monitor)
            throw .udevFailed(operation: "eventfd", errno: error.rawValue)
        }
    }

    deinit {
        udev_monitor_unref(monitor)
    }

    /// Waits for the next change, at most `timeoutMilliseconds` (-1: until one comes or `stop()`).
    /// Returns `nil` on timeout or stop. Events of triggers and other non-device nodes are skipped.
    public func nextChange(timeoutMilliseconds: Int32 = -1) throws(DeviceError) -> DeviceChange? {
        let fd = udev_monitor_get_fd(monitor)
        let deadline = Syscall.monotonicNanoseconds() + Int64(timeoutMilliseconds) * 1_000_000
        while !thread.isStopping {
            var wait = timeoutMilliseconds
            if timeoutMilliseconds >= 0 {
                wait = Int32(max(0, (deadline - Syscall.monotonicNanoseconds()) / 1_000_000))
            }
            let ready: WakeableThread.Wakeup
            switch thread.wait(on: fd, timeoutMilliseconds: wait) {
            case .success(let r): ready = r
            case .failure(let e): throw .udevFailed(operation: "poll", errno: e.rawValue)
            }
            guard !ready.woken, ready.hasInput else { return nil }
            guard let device = udev_monitor_receive_device(monitor) else { continue }
            defer { udev_device_unref(device) }
            let described = Udev.describe(device)
            guard let number = DeviceNumber(sysname: described.sysname),
                let actionName = udev_device_get_action(device).map(string)
            else { continue }
            let action: DeviceChange.Action
            switch actionName {
            case "add", "bind": action = .added
            case "remove", "unbind": action = .removed
            case "change": action = .changed
            default: continue
            }
            return DeviceChange(action: action, device: number, syspath: described.syspath)
        }
        return nil
    }

    /// Wakes a thread blocked in `nextChange` so that it returns `nil`, and waits for the thread that
    /// `start(handler:)` made to end. Not to be called from `handler`.
    public func stop() {
        thread.stop()
    }

    /// Calls `handler` with each change, on a thread of its own, until `stop()`. The thread is a plain
    /// OS thread: the changes arrive however busy Swift concurrency's threads are. If waiting for
    /// udev fails, `handler` gets the error last and the thread ends (devices are then no longer
    /// followed). Returns an error if the thread cannot be made (the process's thread limit).
    public func start(handler: @escaping @Sendable (Result<DeviceChange, DeviceError>) -> Void) -> DeviceError? {
        let failure = thread.start { [self] in
            do throws(DeviceError) {
                while let change = try nextChange() { handler(.success(change)) }
            } catch {
                handler(.failure(error))
            }
        }
        return failure.map { .udevFailed(operation: "pthread_create", errno: $0.rawValue) }
    }
}
