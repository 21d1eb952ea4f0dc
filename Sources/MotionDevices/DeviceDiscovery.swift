import MotionCore
import MotionSystem

/// The motion devices of this machine, and what kept others from being listed.
public struct DeviceListing: Sendable {
    /// Devices with at least one usable sensor, by device number.
    public var devices: [DeviceDescriptor]
    /// IIO devices that could not be used, each with the reason (a trigger is not listed here).
    public var problems: [DeviceError]

    /// A listing of `devices`, and the `problems` of the devices left out.
    public init(devices: [DeviceDescriptor], problems: [DeviceError]) {
        self.devices = devices
        self.problems = problems
    }
}

/// Finds the IIO motion devices through libudev and reads their channels through libiio.
public struct DeviceDiscovery: Sendable {
    let sysfs: Sysfs
    /// Mount matrices from motiond.conf, which win over udev's and sysfs's.
    public var overrides: [MountMatrixOverride]

    /// Creates a discovery over the real `/sys` (which umockdev redirects in tests).
    public init(overrides: [MountMatrixOverride] = []) {
        sysfs = Sysfs()
        self.overrides = overrides
    }

    /// Lists every IIO device with motion or proximity channels.
    ///
    /// No IIO devices at all is an empty listing, not an error. A device that cannot be read is left
    /// out and its reason is in `problems`. libiio reads every device into one context, and fails
    /// the whole of it when one device cannot be read (one unplugged while it reads: ENOENT; a name
    /// beyond its buffer: EFBIG): that is retried a few times, and then each device is described
    /// from its sysfs files instead and read polled, so that one odd device hides no other.
    public func listDevices() throws(DeviceError) -> DeviceListing {
        let udevDevices = try Udev().iioDevices().filter { DeviceNumber(sysname: $0.sysname) != nil }
        guard !udevDevices.isEmpty else { return DeviceListing(devices: [], problems: []) }
        let context: IIOContext
        do {
            context = try Self.makeContext(attempts: 4)
        } catch .contextUnavailable(let errno) {
            return listWithoutLibiio(udevDevices, errno: errno)
        }
        var devices: [DeviceDescriptor] = []
        var problems: [DeviceError] = []
        for udevDevice in udevDevices {
            do {
                devices.append(try describe(udevDevice, in: context))
            } catch {
                problems.append(error)
            }
        }
        return DeviceListing(devices: devices.sorted { $0.number < $1.number }, problems: problems)
    }

    /// The devices described from their sysfs files, for when libiio has no context (`errno`).
    private func listWithoutLibiio(_ udevDevices: [Udev.Device], errno: Int32) -> DeviceListing {
        var devices: [DeviceDescriptor] = []
        var problems: [DeviceError] = []
        for udevDevice in udevDevices {
            let sysname = udevDevice.sysname
            let inspector = DeviceInspector(sysfs: sysfs, properties: udevDevice.properties, overrides: overrides)
            do {
                let name = try sysfs.read(device: sysname, attribute: "name").get().trimmingWhitespace
                devices.append(try inspector.describe(
                    sysname: sysname, name: String(name), channels: SysfsChannel.channels(of: sysname, in: sysfs),
                    syspath: udevDevice.syspath, triggers: nil, problems: [.describedWithoutLibiio(device: sysname, errno: errno)]))
            } catch {
                problems.append(error)
            }
        }
        return DeviceListing(devices: devices.sorted { $0.number < $1.number }, problems: problems)
    }

    /// A libiio context, tried `attempts` times 50 ms apart.
    private static func makeContext(attempts: Int) throws(DeviceError) -> IIOContext {
        var attempt = 1
        while true {
            do {
                return try IIOContext()
            } catch {
                guard attempt < attempts else { throw error }
                attempt += 1
                Syscall.sleep(nanoseconds: 50_000_000)
            }
        }
    }

    /// Describes one device by its number, fresh from udev and libiio (used when opening it).
    public func describe(_ number: DeviceNumber) throws(DeviceError) -> DeviceDescriptor {
        guard let udevDevice = try Udev().iioDevices().first(where: { $0.sysname == number.sysname }) else {
            throw .deviceVanished(device: number.sysname)
        }
        return try describe(udevDevice, in: IIOContext())
    }

    func describe(_ udevDevice: Udev.Device, in context: IIOContext) throws(DeviceError) -> DeviceDescriptor {
        // libiio took its snapshot after udev's: a device removed in between is simply not there.
        guard let iioDevice = context.device(sysname: udevDevice.sysname) else {
            throw .deviceVanished(device: udevDevice.sysname)
        }
        let inspector = DeviceInspector(sysfs: sysfs, properties: udevDevice.properties, overrides: overrides)
        return try inspector.describe(iioDevice, syspath: udevDevice.syspath, context: context)
    }
}
