import MotionCore
import MotionSystem

/// What udev's 60-sensor.rules looks an IIO sensor up by in the hwdb, read from sysfs as the rules
/// read it (systemd 252, identical upstream): `sensor:<label>:modalias:<parent's modalias>:<DMI
/// modalias>` where the device has a `label` (or is a Chromebook's `cros-ec-accel` with a `location`:
/// `lid` is looked up as `accel-display`, `base` as `accel-base`), else `sensor:modalias:…`, with no
/// fallback from the first to the second. The parent is the nearest ancestor with a `modalias` (the rules'
/// `SUBSYSTEMS=="usb|i2c|platform"`: `acpi:BOSC0200:BOSC0200:`, `i2c:bmc150_accel`,
/// `platform:HID-SENSOR-200073`, a device tree's `of:NaccelerometerT(null)Csilan,sc7a20`); the DMI part
/// is `/sys/class/dmi/id/modalias`, empty where there is none (a device-tree machine). udev strips trailing
/// whitespace from each value and turns every byte outside `[0-9A-Za-z#+-.:=@_/ $%?,]` into `_`
/// (udev-event.c, `udev_replace_chars`), so `(ShenZhen)` reaches the hwdb as `_ShenZhen_`.
public struct SensorHwdbKey: Sendable, Hashable {
    /// The IIO device's `label` (`accel-display`, `accel-base`), as udev passes it on.
    public var label: String?
    /// The parent's modalias, as udev passes it on.
    public var modalias: String
    /// The DMI modalias, as udev passes it on.
    public var dmi: String

    /// A key from the values sysfs holds (udev's rewriting applied here).
    public init(label: String?, modalias: String, dmi: String) {
        self.label = label.map(Self.asUdevPassesIt).flatMap { $0.isEmpty ? nil : $0 }
        self.modalias = Self.asUdevPassesIt(modalias)
        self.dmi = Self.asUdevPassesIt(dmi)
    }

    /// The key the rules look up.
    public var lookup: String { label.map { "sensor:\($0):modalias:\(modalias):\(dmi)" } ?? plain }

    /// The key without the label: what 60-sensor.hwdb's entries for labelled sensors are written for.
    public var plain: String { "sensor:modalias:\(modalias):\(dmi)" }

    /// The key of the IIO device at `syspath` (`/sys/devices/…/iio:deviceN`), its DMI modalias read
    /// from `sysRoot/class/dmi/id/modalias` (empty where that file does not exist).
    public static func reading(syspath: String, sysRoot: String = "/sys") throws(DeviceError) -> SensorHwdbKey {
        let device = syspath.split(separator: "/").last.map(String.init) ?? syspath
        func read(_ path: String, _ attribute: String) throws(DeviceError) -> String {
            try Self.readFile(path, device: device, attribute: attribute)
        }
        var parent = syspath
        var modalias: String?
        while modalias == nil, let slash = parent.lastIndex(of: "/"), parent.distance(from: parent.startIndex, to: slash) > 0 {
            parent = String(parent[..<slash])
            if Syscall.exists(parent + "/modalias") { modalias = try read(parent + "/modalias", "../modalias") }
        }
        guard let modalias else {
            throw .attributeUnreadable(device: device, attribute: "modalias of a parent", errno: ErrnoValue.noSuchFile)
        }
        var label = Syscall.exists(syspath + "/label") ? try read(syspath + "/label", "label") : nil
        // A Chromebook's EC sensors have no label but a location, which the rules turn into one.
        if label?.isEmpty ?? true, Syscall.exists(syspath + "/location"), Syscall.exists(syspath + "/name"),
            ["cros-ec-accel", "cros-ec-accel-legacy"].contains(asUdevPassesIt(try read(syspath + "/name", "name")))
        {
            switch asUdevPassesIt(try read(syspath + "/location", "location")) {
            case "lid": label = "accel-display"
            case "base": label = "accel-base"
            default: break
            }
        }
        // A device-tree machine (a PineTab2, a phone) has no DMI: udev then substitutes nothing for
        // `$attr{[dmi/id]modalias}` (udev-format.c, an attribute it cannot read) and looks up
        // `sensor:modalias:of:…:`, which 60-sensor.hwdb's `of:` records are written for.
        let dmi: String
        switch Sysfs().read(path: sysRoot + "/class/dmi/id/modalias") {
        case .success(let text): dmi = text
        case .failure(.noSuchFileOrDirectory): dmi = ""
        case .failure(let e): throw .attributeUnreadable(device: device, attribute: "/sys/class/dmi/id/modalias", errno: e.rawValue)
        }
        return SensorHwdbKey(label: label, modalias: modalias, dmi: dmi)
    }

    private static func readFile(_ path: String, device: String, attribute: String) throws(DeviceError) -> String {
        switch Sysfs().read(path: path) {
        case .success(let text): return text
        case .failure(let e): throw .attributeUnreadable(device: device, attribute: attribute, errno: e.rawValue)
        }
    }

    /// A value as udev's `$attr{}` hands it to the hwdb: trailing whitespace stripped, each byte
    /// outside the allowed set (and each invalid UTF-8 sequence) made `_`.
    static func asUdevPassesIt(_ value: String) -> String {
        var scalars = Substring(value).unicodeScalars
        while let last = scalars.last, last.properties.isWhitespace { scalars.removeLast() }
        return String(String.UnicodeScalarView(scalars.map { s in
            if s.value >= 0x80 { return s }  // valid UTF-8 beyond ASCII is kept
            let c = Character(s)
            return c.isASCII && (c.isLetter || c.isNumber || "#+-.:=@_/ $%?,".contains(c)) ? s : "_"
        }))
    }
}

/// A local hwdb record that gives a sensor its mount matrix, in 60-sensor.hwdb's format: match
/// lines at the start of a line, then properties each after one space, then an empty line.
public struct SensorHwdbRecord: Sendable, Hashable {
    /// The keys it matches: the lookup key, and the plain one too where the sensor has a label
    /// (60-sensor.hwdb writes labelled sensors' entries in the plain form; records match either line).
    public var matches: [String]
    /// `ACCEL_MOUNT_MATRIX`.
    public var matrix: Matrix3
    /// `ACCEL_LOCATION`, for a 2-in-1's sensors.
    public var location: SensorLocation?

    /// The record for `key`.
    public init(key: SensorHwdbKey, matrix: Matrix3, location: SensorLocation? = nil) {
        matches = key.label == nil ? [key.lookup] : [key.lookup, key.plain]
        self.matrix = matrix
        self.location = location
    }

    /// `ACCEL_MOUNT_MATRIX`'s value: rows separated by `; `, elements by `, `, whole numbers as integers.
    public var matrixValue: String {
        [matrix.row0, matrix.row1, matrix.row2].map { row in
            [row.x, row.y, row.z].map { $0 == $0.rounded() ? String(Int($0)) : String($0) }.joined(separator: ", ")
        }.joined(separator: "; ")
    }

    /// The record's text. A `#` would end its line in the hwdb's parser: DMI values never hold one
    /// (the kernel filters them), and globbing is left out, so the record matches this machine only.
    public var text: String {
        var lines = matches
        lines.append(" ACCEL_MOUNT_MATRIX=\(matrixValue)")
        if let location { lines.append(" ACCEL_LOCATION=\(location.rawValue)") }
        return lines.joined(separator: "\n") + "\n"
    }
}
