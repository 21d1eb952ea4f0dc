import Foundation
import MotionDaemon
import MotionHub
import MotionWire
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
    /// (0, −866, 500), MachineClassTests).
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

        /// Laptop → lying open flat → stand (240°) → folded back (300°) → 200° → laptop (150°): the
        /// switch is made off, goes on once past 210° and off once below 190°, and holds while the
        /// display lies flat (180°: the angle says nothing then). Destroyed at stop.
        @Test func foldingPastTheTentTogglesTheSwitchOncePerCrossingAndNeverLyingFlat() throws {
            let (testbed, uinput, daemon) = try Self.convertibleWithItsSwitch()
            #expect(uinput.requests == [Self.setEventBit, Self.setSwitchBit, Self.setUp, Self.create])
            for (degrees, expected) in [(120.0, [0]), (180, [0]), (240, [0, 1]), (300, [0, 1]), (200, [0, 1]), (150, [0, 1, 0])] as [(Double, [Int32])] {
                try Self.fold(testbed, to: degrees)
                if expected.count > 1 { try? waitUntil(seconds: 2) { Self.switchValues(uinput.writes) == expected } }
                #expect(Self.switchValues(uinput.writes) == expected, "at \(degrees)°")
            }
            #expect(daemon.waitForLog("tablet mode on") && daemon.waitForLog("tablet mode off"))
            daemon.signal(SIGTERM)
            #expect(uinput.requests.last == Self.destroy)
        }

        /// The convertible fixture's two devices: the display's and the base's descriptions.
        static func convertibleParts() throws -> (display: String, base: String) {
            let parts = try Testbed.fixture("convertible-two-accelerometers").components(separatedBy: "\n\n")
            let display = try #require(parts.first { $0.contains("location=lid") })
            let base = try #require(parts.first { $0.contains("location=base") })
            return (display, base)
        }

        static let baseSyspath = "/sys/devices/platform/cros-ec-accel.1/iio:device1"

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

        /// Issue 60, item 3: a base accelerometer probed after the daemon started (2 s later: its
        /// driver's module came late) makes the switch then, which follows the hinge.
        @Test func aBaseThatComesLateMakesTheSwitch() throws {
            let (display, base) = try Self.convertibleParts()
            let testbed = try Testbed()
            try testbed.add(display)
            try testbed.add(fixture: "uinput")
            let uinput = try testbed.handleIoctls(on: "/dev/uinput") { _ in .success }
            let daemon = try DaemonProcess(socket: Hardware.Server.socketPath())
            #expect(daemon.waitForLog("tablet mode: no hinge"))
            try testbed.add(base)
            try waitUntil(seconds: 10) { uinput.requests.count >= 4 && Self.switchValues(uinput.writes) == [0] }
            try Self.fold(testbed, to: 300)
            try? waitUntil(seconds: 5) { Self.switchValues(uinput.writes) == [0, 1] }
            #expect(Self.switchValues(uinput.writes) == [0, 1])
            daemon.signal(SIGTERM)
        }

        /// Issue 60 review, item 1: the base comes while the hub is full (`maximumClients` 1, taken by
        /// a socket client), so the switch's watch has no room; the client leaves, changing no device,
        /// and the convertible is folded back to 300°: the switch goes on (it stayed off: the
        /// connection was asked for again only at the next change of the devices).
        @Test func aSwitchMadeWhileTheHubIsFullFollowsTheHingeOnceRoomIsFreed() async throws {
            let (display, base) = try Self.convertibleParts()
            let testbed = try Testbed()
            try testbed.add(display)
            try testbed.add(fixture: "uinput")
            let uinput = try testbed.handleIoctls(on: "/dev/uinput") { _ in .success }
            let server = MotionServer(socketPath: Hardware.Server.socketPath(), source: HardwareSource(), maximumClients: 1, switchesTabletMode: true)
            try await server.start()
            try await server.whileServing {
                let client = try TestClient.greeted(path: server.socketPath)
                try testbed.add(base)
                try waitUntil(seconds: 10) { uinput.requests.count >= 4 && Self.switchValues(uinput.writes) == [0] }
                // Answered on the hub's loop after the switch was made and refused its connection.
                try client.send(#"{"class":"STATUS","id":1}"#)
                #expect(try client.decode(StatusReply.self, try client.next("STATUS")).clients == 1, "the hub full")
                // Folded back to 300° (fold's values, unread until the hinge is watched), then the room freed.
                try testbed.setAttribute("iio:device0", "in_accel_y_raw", "\(Int((-1000 * sin(300 * Double.pi / 180)).rounded()))\n")
                try testbed.setAttribute("iio:device0", "in_accel_z_raw", "\(Int((-1000 * cos(300 * Double.pi / 180)).rounded()))\n")
                shutdown(client.fd, Int32(SHUT_RDWR))
                try? waitUntil(seconds: 10) { Self.switchValues(uinput.writes) == [0, 1] }
                #expect(Self.switchValues(uinput.writes) == [0, 1])
            }
        }

        /// Issue 60, item 3: the base removed while tablet mode is on, plugged back in, and the
        /// convertible opened to a laptop at 120°: the switch goes off (it stayed on: the hinge was
        /// never watched again).
        @Test func aBasePluggedBackInIsFollowedAgain() throws {
            let (_, base) = try Self.convertibleParts()
            let (testbed, uinput, daemon) = try Self.convertibleWithItsSwitch()
            try Self.fold(testbed, to: 300)
            try waitUntil { Self.switchValues(uinput.writes) == [0, 1] }
            testbed.remove(syspath: Self.baseSyspath)
            #expect(daemon.waitForLog("sensor removed"))
            try testbed.add(base)
            try Self.fold(testbed, to: 120)
            try? waitUntil(seconds: 10) { Self.switchValues(uinput.writes) == [0, 1, 0] }
            #expect(Self.switchValues(uinput.writes) == [0, 1, 0])
            daemon.signal(SIGTERM)
        }

        /// Issue 60, item 3 and its review: folded to 300° (tablet mode on), then the base's values
        /// unreadable long enough to end its capture (ENDED): the hinge can no longer be followed, so
        /// the switch goes off (a working keyboard is the safe failure; it stayed on while the user
        /// opened a laptop with a dead base), said once. Readable again and still at 300°: the hinge
        /// is followed again and the switch goes back on.
        @Test func aBaseWhoseReadsFailedTurnsTheSwitchOffAndIsFollowedAgain() throws {
            let (testbed, uinput, daemon) = try Self.convertibleWithItsSwitch()
            try Self.fold(testbed, to: 300)
            try waitUntil { Self.switchValues(uinput.writes) == [0, 1] }
            try testbed.setAttribute("iio:device1", "in_accel_z_raw", "garbage\n")
            #expect(daemon.waitForLog("sensor ended", seconds: 15))
            try? waitUntil(seconds: 5) { Self.switchValues(uinput.writes) == [0, 1, 0] }
            #expect(Self.switchValues(uinput.writes) == [0, 1, 0], "off once the hinge is lost")
            #expect(daemon.waitForLog("the hinge cannot be followed"))
            try testbed.setAttribute("iio:device1", "in_accel_z_raw", "-1000\n")
            try Self.fold(testbed, to: 300)
            try? waitUntil(seconds: 10) { Self.switchValues(uinput.writes) == [0, 1, 0, 1] }
            #expect(Self.switchValues(uinput.writes) == [0, 1, 0, 1])
            daemon.signal(SIGTERM)
            let log = daemon.finalLog()
            #expect(log.components(separatedBy: "the hinge cannot be followed").count == 2, "said once: \(log.suffix(3000))")
        }

        /// Issue 60, item 14: a write to uinput that fails is tried again at the next hinge sample
        /// while the switch holds another state than the hinge asks for, and the journal tells only
        /// changes the switch took: folded to 300° while writes fail (on refused), back to 150° (off:
        /// nothing to write, and no "off" for a switch never on), to 300° again, then writes taken.
        @Test func aFailedWriteIsTriedAgainAndOnlyAChangeTakenIsLogged() throws {
            let (testbed, uinput, daemon) = try Self.convertibleWithItsSwitch()
            uinput.writeError = EIO
            try Self.fold(testbed, to: 300)
            #expect(daemon.waitForLog("cannot set the switch"))
            try Self.fold(testbed, to: 150)
            try Self.fold(testbed, to: 300)
            uinput.writeError = nil
            try? waitUntil(seconds: 5) { Self.switchValues(uinput.writes) == [0, 1] }
            #expect(Self.switchValues(uinput.writes) == [0, 1], "tried again once writes are taken")
            #expect(daemon.waitForLog("tablet mode on"))
            daemon.signal(SIGTERM)
            let log = daemon.finalLog()
            #expect(log.components(separatedBy: "tablet mode off").count == 1, "no off for a switch never on: \(log.suffix(3000))")
            #expect(log.components(separatedBy: "tablet mode on").count == 2, "one on, the write that took")
        }

        /// A tablet with one accelerometer has no hinge: no switch is made, not even one left off
        /// (libinput would take the machine for a convertible).
        @Test func noSwitchWithoutAHinge() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "tablet-iio-sensor-proxy")
            try testbed.add(fixture: "uinput")
            let uinput = try testbed.handleIoctls(on: "/dev/uinput") { _ in .success }
            let daemon = try DaemonProcess(socket: Hardware.Server.socketPath())
            #expect(daemon.waitForLog("tablet mode: no hinge"))
            #expect(uinput.requests.isEmpty)
            daemon.signal(SIGTERM)
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
