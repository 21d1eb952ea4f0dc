/// Writes sysfs attributes for a capture and puts every one back as it was when the capture closes.
struct AttributeRestorer {
    let sysfs: Sysfs
    let device: String
    private var saved: [(attribute: String, value: String)] = []

    init(sysfs: Sysfs, device: String) {
        self.sysfs = sysfs
        self.device = device
    }

    /// Sets `attribute` to `value`, remembering the old value (once) to restore later.
    mutating func set(_ attribute: String, to value: String) throws(DeviceError) {
        let old = try sysfs.read(device: device, attribute: attribute).get()
        if !saved.contains(where: { $0.attribute == attribute }) {
            saved.append((attribute, String(old.trimmingWhitespace)))
        }
        try sysfs.write(device: device, attribute: attribute, value: value).get()
    }

    /// Restores every changed attribute, last changed first. Errors are ignored: a vanished device
    /// has nothing to restore.
    mutating func restoreAll() {
        for (attribute, value) in saved.reversed() {
            _ = sysfs.write(device: device, attribute: attribute, value: value)
        }
        saved.removeAll()
    }
}
