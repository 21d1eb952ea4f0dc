import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Hardware {
    /// The tablet-mode switch, at uinput's interface: umockdev's ioctl handler on `/dev/uinput`
    /// takes the daemon's requests and `input_event` writes (include/uapi/linux/uinput.h,
    /// input-event-codes.h). The convertible's base lies on the table, reading (0, 0, −1000) counts,
    /// and its display at a hinge angle θ reads (0, −1000 sin θ, −1000 cos θ) (120°: the fixture's
    /// (0, −866, 500), MachineClassTests). What the front end does with the hinge is
    /// TabletModeRulesTests', on the hub test kit; here, uinput's interface and the kernel's own switch.
    @Suite struct TabletMode {
        static let setEventBit: UInt = 0x4004_5564, setSwitchBit: UInt = 0x4004_556D, setUp: UInt = 0x405C_5503
        static let create: UInt = 0x5501, destroy: UInt = 0x5502

        /// The `EV_SW SW_TABLET_MODE` values written, each checked to be followed by `EV_SYN SYN_REPORT`.
        static func switchValues(_ writes: [[UInt8]]) -> [Int32] {
            let bytes = writes.flatMap { $0 }
            var values: [Int32] = []
            var offset = 0
            while offset + 48 <= bytes.count {
                func u16(_ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
                func s32(_ at: Int) -> Int32 { Int32(bitPattern: UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24) }
                guard u16(offset + 16) == 5, u16(offset + 18) == 1, u16(offset + 24 + 16) == 0, u16(offset + 24 + 18) == 0 else { return values + [-1] }
                values.append(s32(offset + 20))
                offset += 48
            }
            return offset == bytes.count ? values : values + [-1]
        }

        /// Sets the display at `degrees` and waits until the daemon has read it and made its hinge.
        static func fold(_ testbed: Testbed, to degrees: Double) throws {
            let θ = degrees * .pi / 180
            try testbed.setAttribute("iio:device0", "in_accel_y_raw", "\(Int((-1000 * sin(θ)).rounded()))\n")
            try testbed.setAttribute("iio:device0", "in_accel_z_raw", "\(Int((-1000 * cos(θ)).rounded()))\n")
            try testbed.waitForReads(of: "in_accel_z_raw", on: "iio:device0")
            try testbed.waitForReads(of: "in_accel_z_raw", on: "iio:device0")
        }

        /// uinput's interface, end to end: the switch is made (`UI_SET_EVBIT EV_SW`, `UI_SET_SWBIT
        /// SW_TABLET_MODE`, `UI_DEV_SETUP`, `UI_DEV_CREATE`) and written off; folded back to 300° it is
        /// written on, each value followed by `SYN_REPORT`; destroyed at stop. The front end's rules
        /// (each crossing, lying flat, the base coming and going, failed writes) are
        /// TabletModeRulesTests', on the hub test kit.
        @Test func theSwitchIsAUinputDeviceMadeOffWrittenOnAFoldAndDestroyedAtStop() throws {
            let (testbed, uinput, daemon) = try Self.convertibleWithItsSwitch()
            #expect(uinput.requests == [Self.setEventBit, Self.setSwitchBit, Self.setUp, Self.create])
            try Self.fold(testbed, to: 300)
            try? waitUntil(seconds: 2) { Self.switchValues(uinput.writes) == [0, 1] }
            #expect(Self.switchValues(uinput.writes) == [0, 1])
            #expect(daemon.waitForLog("tablet mode on"))
            daemon.signal(SIGTERM)
            #expect(uinput.requests.last == Self.destroy)
        }

        /// A daemon on a convertible whose switch has been made, off: the testbed and uinput's handler.
        static func convertibleWithItsSwitch() throws -> (Testbed, IoctlHandler, DaemonProcess) {
            let testbed = try Testbed()
            try testbed.add(fixture: "convertible-two-accelerometers")
            try testbed.add(fixture: "uinput")
            let uinput = try testbed.handleIoctls(on: "/dev/uinput") { _ in .success }
            let daemon = try DaemonProcess(socket: Hardware.Server.socketPath())
            try waitUntil { uinput.requests.count >= 4 && Self.switchValues(uinput.writes) == [0] }
            return (testbed, uinput, daemon)
        }

        /// A kernel that reports tablet mode itself (an input device with SW_TABLET_MODE, as
        /// intel-hid's and the EC drivers' are): motiond makes no switch, and says why.
        @Test func noSwitchWhereTheKernelHasOne() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "convertible-two-accelerometers")
            try testbed.add(fixture: "uinput")
            try testbed.add("""
                P: /devices/platform/INT33D5:00/input/input5
                E: SUBSYSTEM=input
                A: name=Intel HID switches\\n
                A: capabilities/sw=2\\n
                """)
            let uinput = try testbed.handleIoctls(on: "/dev/uinput") { _ in .success }
            let daemon = try DaemonProcess(socket: Hardware.Server.socketPath())
            #expect(daemon.waitForLog("the kernel reports it already"))
            #expect(uinput.requests.isEmpty)
            daemon.signal(SIGTERM)
        }
    }
}
