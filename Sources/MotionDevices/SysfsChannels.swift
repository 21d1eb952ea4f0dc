import CLibIIO
import MotionSystem

/// What the device inspector needs to know of a channel: libiio's parse (`IIOChannel`), or, where
/// libiio cannot make a context at all, one made from the device's sysfs file names (`SysfsChannel`).
protocol ChannelInfo {
    /// libiio's channel id: `accel_x`, `proximity0`, `timestamp`.
    var id: String { get }
    var type: iio_chan_type { get }
    var modifier: iio_modifier { get }
    var isOutput: Bool { get }
    var isScanElement: Bool { get }
    var scanIndex: Int { get }
    /// The sysfs file behind a channel attribute (`scale` → `in_accel_scale` or `in_accel_x_scale`).
    func filename(ofAttribute name: String) -> String?
}

extension IIOChannel: ChannelInfo {}

/// A motion channel found by its sysfs files, as libiio's local backend names them: `in_<type>[<n>]
/// [_<x|y|z>]_<attribute>`, an attribute without the modifier shared by the type's channels.
/// Used only when libiio's context of all devices fails (one device it cannot read hides every other
/// one from it): then a device is described from these and read polled.
struct SysfsChannel: ChannelInfo {
    let id: String
    let type: iio_chan_type
    let modifier: iio_modifier
    var isOutput: Bool { false }
    let isScanElement: Bool
    let scanIndex: Int
    /// The device's file names, to look attributes up in.
    private let files: Set<String>
    private let typeName: String

    func filename(ofAttribute name: String) -> String? {
        ["in_\(id)_\(name)", "in_\(typeName)_\(name)"].first(where: files.contains)
    }

    private static let types: [(String, iio_chan_type)] = [
        ("anglvel", IIO_ANGL_VEL), ("accel", IIO_ACCEL), ("magn", IIO_MAGN), ("proximity", IIO_PROXIMITY),
        ("illuminance", IIO_LIGHT), ("pressure", IIO_PRESSURE), ("intensity", IIO_INTENSITY), ("rot", IIO_ROT),
        ("steps", IIO_STEPS), ("activity", IIO_ACTIVITY),
        // IIO_ATTENTION (Linux 6.13) is past libiio 0.24's types: unknown to it, as here.
        ("attention", IIO_CHAN_TYPE_UNKNOWN),
    ]
    private static let modifiers: [(String, iio_modifier)] = [
        ("x", IIO_MOD_X), ("y", IIO_MOD_Y), ("z", IIO_MOD_Z), ("both", IIO_MOD_LIGHT_BOTH),
        ("from_north_magnetic_tilt_comp", IIO_MOD_NORTH_MAGN_TILT_COMP), ("still", IIO_MOD_STILL), ("walking", IIO_MOD_WALKING),
        ("running", IIO_MOD_RUNNING), ("jogging", IIO_MOD_JOGGING),
    ]

    /// The motion channels of device `sysname`: those with a `raw` or `input` value.
    static func channels(of sysname: String, in sysfs: Sysfs) -> [SysfsChannel] {
        let directory = sysfs.deviceDirectory(sysname)
        let files = Set(Syscall.directoryEntries(directory))
        let scanFiles = Set(Syscall.directoryEntries(directory + "/scan_elements"))
        var channels: [SysfsChannel] = []
        for file in files.sorted() where file.hasPrefix("in_") && (file.hasSuffix("_raw") || file.hasSuffix("_input")) {
            let name = file.dropFirst(3).dropLast(file.hasSuffix("_raw") ? 4 : 6)  // "accel_x", "proximity0"
            guard let (typeName, type) = types.first(where: { name.hasPrefix($0.0) }) else { continue }
            let rest = name.dropFirst(typeName.count)  // "_x", "0", ""
            var modifier = IIO_NO_MOD
            if rest.hasPrefix("_") {
                guard let found = modifiers.first(where: { rest == "_" + $0.0 }) else { continue }
                modifier = found.1
            } else if !rest.allSatisfy(\.isNumber) {
                continue
            }
            let id = String(name)
            guard !channels.contains(where: { $0.id == id }) else { continue }  // both raw and input
            // A scan element has an index, an integer as libiio reads it; anything else (1e300 would
            // trap a conversion) makes the channel none.
            var index = -1
            if scanFiles.contains("in_\(id)_en"), case .success(let text) = sysfs.read(device: sysname, attribute: "scan_elements/in_\(id)_index"),
                let parsed = Int(text.trimmingWhitespace), parsed >= 0
            {
                index = parsed
            }
            let isScanElement = index >= 0
            channels.append(SysfsChannel(
                id: id, type: type, modifier: modifier, isScanElement: isScanElement, scanIndex: index, files: files,
                typeName: typeName))
        }
        return channels
    }
}
