import MotionSystem

/// Reads and writes sysfs attribute files by path; the root is `/sys` on a real system (redirected by
/// umockdev in tests) and a plain directory in unit tests. With `network`, the files are another
/// machine's, through iiod.
struct Sysfs: Sendable {
    /// The directory that stands for `/sys`.
    var root: String = "/sys"
    /// Another machine's sysfs, instead of this one's files.
    var network: NetworkAttributes?

    init(root: String = "/sys") { self.root = root }

    init(network: NetworkAttributes) { self.network = network }

    /// The directory of IIO device `sysname`.
    func deviceDirectory(_ sysname: String) -> String { "\(root)/bus/iio/devices/\(sysname)" }

    /// Reads a whole attribute (at most 4 KiB, sysfs's page) as text.
    func read(device: String, attribute: String) -> Result<String, DeviceError> {
        if let network { return network.read(device: device, attribute: attribute) }
        return read(path: "\(deviceDirectory(device))/\(attribute)").mapError { .attributeUnreadable(device: device, attribute: attribute, errno: $0.rawValue) }
    }

    /// Reads a whole file of this machine's sysfs by its path (at most 4 KiB) as text.
    func read(path: String) -> Result<String, Errno> {
        do {
            let file = try Syscall.openReadOnly(path)
            var bytes = [UInt8](repeating: 0, count: 4096)
            return bytes.withUnsafeMutableBytes { Syscall.readFromStart(file.rawValue, into: $0) }.map { String(decoding: bytes[0..<$0], as: UTF8.self) }
        } catch {
            return .failure(error)
        }
    }

    /// Reads an attribute that may be absent: `nil` when the file does not exist.
    func readIfPresent(device: String, attribute: String) -> Result<String?, DeviceError> {
        guard exists(device: device, attribute: attribute) else { return .success(nil) }
        return read(device: device, attribute: attribute).map { Optional($0) }
    }

    /// Writes an attribute, with the trailing newline sysfs expects from `echo`.
    func write(device: String, attribute: String, value: String) -> Result<Void, DeviceError> {
        if let network { return network.write(device: device, attribute: attribute, value: value) }
        let path = "\(deviceDirectory(device))/\(attribute)"
        let written: Result<Void, Errno>
        do {
            let file = try Syscall.openWriteOnly(path)
            written = Syscall.write(file.rawValue, Array((value + "\n").utf8))
        } catch {
            written = .failure(error)
        }
        return written.mapError { .attributeUnwritable(device: device, attribute: attribute, errno: $0.rawValue) }
    }

    /// Whether an attribute file exists.
    func exists(device: String, attribute: String) -> Bool {
        if let network { return network.exists(device: device, attribute: attribute) }
        return Syscall.exists("\(deviceDirectory(device))/\(attribute)")
    }

    /// Whether the device's directory still exists.
    func deviceExists(_ sysname: String) -> Bool {
        if let network { return network.deviceAnswers(sysname) }
        return Syscall.exists(deviceDirectory(sysname))
    }
}
