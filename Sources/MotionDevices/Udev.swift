import CLibUdev
import MotionSystem

/// Owns a libudev context. Thin, typed wrappers over the libudev calls the device layer makes.
final class Udev: @unchecked Sendable {
    // @unchecked: used by one thread at a time (discovery, or the monitor's thread).
    let pointer: OpaquePointer

    init() throws(DeviceError) {
        guard let udev = udev_new() else { throw .udevFailed(operation: "udev_new", errno: currentErrno()) }
        pointer = udev
    }

    deinit { udev_unref(pointer) }

    /// What udev knows of one device.
    struct Device {
        var syspath: String
        var sysname: String
        var properties: [String: String]
    }

    /// Every device of the `iio` subsystem, as udev enumerates it now.
    func iioDevices() throws(DeviceError) -> [Device] {
        guard let enumerate = udev_enumerate_new(pointer) else {
            throw .udevFailed(operation: "udev_enumerate_new", errno: currentErrno())
        }
        defer { udev_enumerate_unref(enumerate) }
        _ = udev_enumerate_add_match_subsystem(enumerate, "iio")
        let status = udev_enumerate_scan_devices(enumerate)
        guard status >= 0 else { throw .udevFailed(operation: "udev_enumerate_scan_devices", errno: -status) }
        var devices: [Device] = []
        var entry = udev_enumerate_get_list_entry(enumerate)
        while let current = entry {
            if let path = udev_list_entry_get_name(current),
                let device = udev_device_new_from_syspath(pointer, path)
            {
                devices.append(Self.describe(device))
                udev_device_unref(device)
            }
            entry = udev_list_entry_get_next(current)
        }
        return devices
    }

    static func describe(_ device: OpaquePointer) -> Device {
        var properties: [String: String] = [:]
        var entry = udev_device_get_properties_list_entry(device)
        while let current = entry {
            if let name = udev_list_entry_get_name(current) {
                properties[string(name)] = udev_list_entry_get_value(current).map(string) ?? ""
            }
            entry = udev_list_entry_get_next(current)
        }
        return Device(
            syspath: udev_device_get_syspath(device).map(string) ?? "",
            sysname: udev_device_get_sysname(device).map(string) ?? "",
            properties: properties)
    }
}

func string(_ pointer: UnsafePointer<CChar>) -> String {
    String(validatingCString: pointer) ?? ""
}
