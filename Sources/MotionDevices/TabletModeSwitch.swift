import MotionSystem

/// A tablet-mode switch of motiond's own: a uinput device with `SW_TABLET_MODE`, which desktops
/// (GNOME, KDE, Phosh, Cinnamon, through libinput) act on by turning the keyboard and touchpad off
/// and the on-screen keyboard on. For convertibles whose kernel has no driver that reports the switch.
///
/// The uinput protocol (include/uapi/linux/uinput.h, Documentation/input/uinput.rst): open
/// `/dev/uinput`, `UI_SET_EVBIT(EV_SW)`, `UI_SET_SWBIT(SW_TABLET_MODE)`, `UI_DEV_SETUP` with the
/// device's id and name, `UI_DEV_CREATE`; then each change is an `input_event` `EV_SW
/// SW_TABLET_MODE 0|1` followed by `EV_SYN SYN_REPORT`. `UI_DEV_DESTROY` when it goes.
public final class TabletModeSwitch: @unchecked Sendable {
    // @unchecked: one thread at a time uses it: made by its owner, then set from the hub's loop only.
    /// The device's name, as libinput and `/proc/bus/input/devices` show it.
    public static let name = "motiond tablet mode switch"
    /// Whether the switch is on (tablet mode), as last written.
    public private(set) var isOn = false
    private let file: OwnedDescriptor

    // include/uapi/linux/uinput.h and input-event-codes.h.
    static let setEventBit: UInt = 0x4004_5564  // _IOW('U', 100, int)
    static let setSwitchBit: UInt = 0x4004_556D  // _IOW('U', 109, int)
    static let setUp: UInt = 0x405C_5503  // _IOW('U', 3, struct uinput_setup): 92 bytes
    static let create: UInt = 0x5501  // _IO('U', 1)
    static let destroy: UInt = 0x5502  // _IO('U', 2)
    static let eventSwitch: UInt16 = 0x05  // EV_SW
    static let switchTabletMode: UInt16 = 0x01  // SW_TABLET_MODE
    static let eventSync: UInt16 = 0x00  // EV_SYN, SYN_REPORT = 0
    /// `struct input_event` on a 64-bit machine: a 16-byte `struct timeval` (0: the kernel stamps
    /// it), then type, code (u16) and value (s32).
    static let eventSize = 24

    /// Creates the switch, off, through `path` (`/dev/uinput`).
    ///
    /// - Throws: `uinputFailed` naming the step (EACCES: the service may not open `/dev/uinput`;
    ///   ENOENT: the uinput module is not loaded).
    public init(path: String = "/dev/uinput") throws(DeviceError) {
        do {
            file = try Syscall.openDeviceForWriting(path)
        } catch {
            throw .uinputFailed(operation: "open \(path)", errno: error.rawValue)
        }
        try step("UI_SET_EVBIT EV_SW") { Syscall.ioctl(file.rawValue, Self.setEventBit, value: Int32(Self.eventSwitch)) }
        try step("UI_SET_SWBIT SW_TABLET_MODE") { Syscall.ioctl(file.rawValue, Self.setSwitchBit, value: Int32(Self.switchTabletMode)) }
        // struct uinput_setup: struct input_id (bustype BUS_VIRTUAL 0x06, vendor, product, version:
        // u16 each), char name[80], u32 ff_effects_max.
        var setup = [UInt8](repeating: 0, count: 92)
        setup[0] = 0x06
        for (i, byte) in Self.name.utf8.prefix(79).enumerated() { setup[8 + i] = byte }
        try step("UI_DEV_SETUP") { setup.withUnsafeMutableBytes { Syscall.ioctl(file.rawValue, Self.setUp, pointer: $0.baseAddress!) } }
        try step("UI_DEV_CREATE") { Syscall.ioctl(file.rawValue, Self.create) }
        try write(on: false)
    }

    deinit { _ = Syscall.ioctl(file.rawValue, Self.destroy) }

    /// Sets the switch: on is tablet mode. Writes only a change.
    public func set(_ on: Bool) throws(DeviceError) {
        guard on != isOn else { return }
        try write(on: on)
    }

    private func write(on: Bool) throws(DeviceError) {
        var bytes = [UInt8](repeating: 0, count: 2 * Self.eventSize)
        Self.put(type: Self.eventSwitch, code: Self.switchTabletMode, value: on ? 1 : 0, into: &bytes, at: 0)
        Self.put(type: Self.eventSync, code: 0, value: 0, into: &bytes, at: Self.eventSize)
        try step("write SW_TABLET_MODE \(on ? 1 : 0)") { Syscall.write(file.rawValue, bytes) }
        isOn = on
    }

    private static func put(type: UInt16, code: UInt16, value: Int32, into bytes: inout [UInt8], at offset: Int) {
        withUnsafeBytes(of: type.littleEndian) { bytes.replaceSubrange(offset + 16..<offset + 18, with: $0) }
        withUnsafeBytes(of: code.littleEndian) { bytes.replaceSubrange(offset + 18..<offset + 20, with: $0) }
        withUnsafeBytes(of: value.littleEndian) { bytes.replaceSubrange(offset + 20..<offset + 24, with: $0) }
    }

    private func step(_ operation: String, _ call: () -> Result<Void, Errno>) throws(DeviceError) {
        if case .failure(let e) = call() { throw .uinputFailed(operation: operation, errno: e.rawValue) }
    }

    /// Whether an input device of the kernel's (not this switch) already reports `SW_TABLET_MODE`:
    /// bit 1 of its `capabilities/sw` (a hexadecimal bitmap, its lowest word last) under
    /// `sysRoot/class/input`.
    public static func kernelHasOne(sysRoot: String = "/sys") -> Bool {
        guard case .success(let inputs) = Syscall.directoryEntries(sysRoot + "/class/input") else { return false }
        let sysfs = Sysfs(root: sysRoot)
        for input in inputs where input.hasPrefix("input") {
            let directory = "\(sysRoot)/class/input/\(input)"
            guard case .success(let bitmap) = sysfs.read(path: directory + "/capabilities/sw"),
                let lowest = bitmap.split(whereSeparator: \.isWhitespace).last, let bits = UInt64(lowest, radix: 16),
                bits & (1 << UInt64(switchTabletMode)) != 0
            else { continue }
            if case .success(let name) = sysfs.read(path: directory + "/name"), name.trimmingWhitespace == Self.name { continue }
            return true
        }
        return false
    }
}
