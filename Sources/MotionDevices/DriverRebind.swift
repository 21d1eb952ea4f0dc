import MotionSystem

/// The last resort for a sensor that no re-arm wakes (sleep-and-recovery.md): its parent device (the
/// I²C, SPI or HID device the IIO device hangs under) unbound from its driver and bound again, which
/// re-probes the chip, by writing the parent's name to the driver's `unbind`, then `bind`
/// (Documentation/ABI/testing/sysfs-bus-*: "bind/unbind … write the device name"). It needs root, and
/// the IIO device goes and comes back as a new `iio:deviceN`, through hot-plug: only where motiond.conf
/// allows it (`rebind_stalled_sensors`).
public enum DriverRebind {
    /// Unbinds the parent of IIO device `sysname` from its driver and binds it again, in the sysfs at
    /// `sysRoot`; returns "<parent> on <driver>" for the log.
    public static func rebind(_ sysname: String, sysRoot: String = "/sys") throws(DeviceError) -> String {
        func failed(_ step: String, _ error: Errno) -> DeviceError { .rebindFailed(device: sysname, step: step, errno: error.rawValue) }
        // `..` after the bus's symbolic link is the device's real parent in /sys/devices.
        let parent: String
        let driver: String
        switch Syscall.resolvedPath(Sysfs(root: sysRoot).deviceDirectory(sysname) + "/..") {
        case .success(let path): parent = path
        case .failure(let error): throw failed("finding its parent", error)
        }
        switch Syscall.resolvedPath(parent + "/driver") {
        case .success(let path): driver = path
        case .failure(let error): throw failed("finding its parent's driver", error)
        }
        // Only where the kernel puts them: a parent under devices/, a driver under bus/<bus>/drivers/
        // (a tree that says otherwise is not sysfs, and nothing else named bind or unbind is written).
        let root = (try? Syscall.resolvedPath(sysRoot).get()) ?? sysRoot
        let driverPath = driver.dropFirst(root.count).split(separator: "/")
        guard parent.hasPrefix(root + "/devices/"),
            driver.hasPrefix(root + "/bus/"), driverPath.count == 4, driverPath[2] == "drivers"
        else { throw failed("finding its parent's driver under \(root)/bus", Errno(rawValue: ErrnoValue.invalidArgument)) }
        let name = String(parent.split(separator: "/").last ?? "")
        for step in ["unbind", "bind"] {
            do throws(Errno) {
                let file = try Syscall.openWriteOnly(driver + "/" + step)
                if case .failure(let error) = Syscall.write(file.rawValue, Array(name.utf8)) { throw error }
            } catch {
                throw failed("writing \(name) to \(driver)/\(step)", error)
            }
        }
        return "\(name) on \(driver.split(separator: "/").last ?? "")"
    }
}
