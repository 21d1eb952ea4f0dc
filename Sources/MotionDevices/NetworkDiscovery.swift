import MotionCore

/// The motion devices of another machine, served by its iiod and reached through libiio's network
/// backend (`ip:host[:port]`): described by the same inspector as local ones, read through the
/// buffer iiod streams where the channels are scan elements, else polled (a round trip per channel).
///
/// Their device numbers are moved to `firstNumber` and up, so that they never meet this machine's
/// (`iio:device0` there is `iio:device<firstNumber>` here); `remoteNumber(of:)` maps them back.
public struct NetworkDiscovery: Sendable {
    /// The libiio URI, `ip:host[:port]`.
    public let uri: String
    /// The number the remote `iio:device0` gets here.
    public let firstNumber: Int32
    /// Mount matrices from motiond.conf, which win over the remote's sysfs (it has no udev here).
    public var overrides: [MountMatrixOverride]

    public init(uri: String, firstNumber: Int32, overrides: [MountMatrixOverride] = []) {
        (self.uri, self.firstNumber, self.overrides) = (uri, firstNumber, overrides)
    }

    /// Whether `number` is one of this remote's, as numbered here.
    public func owns(_ number: DeviceNumber) -> Bool {
        (firstNumber..<firstNumber + Self.numbersPerContext).contains(number.rawValue)
    }

    /// Device numbers kept for each remote context.
    public static let numbersPerContext: Int32 = 1000

    /// The remote's own number of a device numbered here.
    public func remoteNumber(of number: DeviceNumber) -> DeviceNumber { DeviceNumber(number.rawValue - firstNumber) }

    /// Lists the remote's motion devices; an unreachable remote throws `networkContextUnavailable`.
    public func listDevices() throws(DeviceError) -> DeviceListing {
        let attributes = try NetworkAttributes(uri: uri)
        let inspector = DeviceInspector(sysfs: Sysfs(network: attributes), properties: [:], overrides: overrides)
        var devices: [DeviceDescriptor] = []
        var problems: [DeviceError] = []
        for device in attributes.context.devices where !device.isTrigger {
            guard let number = DeviceNumber(sysname: device.id), number.rawValue < Self.numbersPerContext else { continue }
            do {
                // No triggers listed: the board's trigger is left as the board sets it.
                var descriptor = try inspector.describe(
                    sysname: device.id, name: device.name, channels: device.channels, syspath: "\(uri)/\(device.id)", triggers: nil)
                descriptor.number = DeviceNumber(firstNumber + number.rawValue)
                devices.append(descriptor)
            } catch {
                problems.append(error)
            }
        }
        return DeviceListing(devices: devices.sorted { $0.number < $1.number }, problems: problems)
    }

    /// Opens a capture of a device listed by `listDevices`, on a connection of its own to iiod.
    public func open(_ device: DeviceDescriptor, kinds: [SensorKind], rate: Double) throws(DeviceError) -> SensorCapture {
        var remote = device
        remote.number = remoteNumber(of: device.number)
        return try SensorCapture(remote: remote, kinds: kinds, rate: rate, attributes: try NetworkAttributes(uri: uri))
    }
}
