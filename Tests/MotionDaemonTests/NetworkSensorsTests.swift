import Foundation
import MotionCore
import MotionWire
import TestSupport
import Testing

@testable import MotionDaemon

extension Hardware {
    /// Another machine's sensors through libiio's network backend: Debian's `iiod` serves a umockdev
    /// tablet (it runs under the testbed's preload, as the tests do), and a motiond that sees no
    /// local devices (no preload) fuses them.
    @Suite struct NetworkSensors {
        /// `iiod -p port` on the testbed, killed when released.
        final class IIOD {
            let process = Process()
            let port: Int

            init() throws {
                port = try freeLoopbackPort()
                process.executableURL = URL(fileURLWithPath: "/usr/sbin/iiod")
                process.arguments = ["-p", "\(port)"]
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                try process.run()
                try waitUntil { MosquittoBroker.accepts(port: port) }
            }

            func kill() {
                Glibc.kill(process.processIdentifier, SIGKILL)
                process.waitUntilEnded(seconds: 5)
            }

            deinit { kill() }
        }

        /// A motiond outside the testbed whose only sensors are iiod's on `port`.
        static func daemon(port: Int) throws -> DaemonProcess {
            let path = NSTemporaryDirectory() + "motiond-network-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).conf"
            try "network_sensors: [\"ip:127.0.0.1:\(port)\"]\n".write(toFile: path, atomically: true, encoding: .utf8)
            let state = NSTemporaryDirectory() + "motiond-state-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            return try DaemonProcess(
                socket: Server.socketPath(), arguments: ["--config", path, "--state-directory", state],
                environment: ["LD_PRELOAD": "", "UMOCKDEV_DIR": ""])
        }

        /// The tablet of `MachineClass.tabletWithAnAccelerometerAndAMagnetometerGetsItsCompassHeading`,
        /// lying face up with its top edge pointing east, read over the network: the same expectations
        /// (heading 90°, gravity (0, 0, −1) g, field (−19, 0, −46) µT, worked out there from the Earth's
        /// field and Linux userspace's frame).
        @Test func aTabletServedByIIODIsFusedByAMotiondElsewhere() throws {
            let testbed = try Testbed()
            try testbed.add(fixture: "tablet-accelerometer-magnetometer")
            let iiod = try IIOD()
            let daemon = try Self.daemon(port: iiod.port)
            defer { daemon.signal(SIGTERM) }
            let client = try TestClient(path: daemon.socket)
            _ = try client.next("VERSION")

            try client.send(#"{"class":"DEVICES"}"#)
            let devices = try client.decode(DevicesReply.self, try client.next("DEVICES")).devices
            #expect(devices.map(\.device) == ["iio:device10000", "iio:device10001"], "the remote's iio:device0 and 1, numbered apart from local ones")
            #expect(devices.map(\.name) == ["KIOX000A:00", "ak09911"])
            #expect(devices.allSatisfy { $0.mode == "network" })

            try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.1,"frame":"xMagneticNorthZVertical"}"#)
            _ = try client.next("WATCHING")
            var motion: MotionMessage?
            // The magnetometer's calibration starts from nothing: the heading settles within a few samples.
            for _ in 0..<20 {
                motion = try client.decode(MotionMessage.self, try client.next("MOTION"))
                if let heading = motion?.heading, abs(heading - 90) < 1 { break }
            }
            let last = try #require(motion)
            #expect(abs((last.heading ?? 0) - 90) < 1, "heading \(String(describing: last.heading))°")
            #expect((last.gravity - Vector3(x: 0, y: 0, z: -1)).length < 0.005, "\(last.gravity)")
            #expect((last.magneticField.field - Vector3(x: -19, y: 0, z: -46)).length < 0.5, "\(last.magneticField.field)")
            #expect(last.unavailable == [.rotationRate])

            // The board goes away: the stream ends with its reason; the daemon goes on.
            iiod.kill()
            let ended = try client.decode(Ended.self, try client.next("ENDED", seconds: 15))
            #expect(ended.stream == .motion, "\(ended)")
            try client.send(#"{"class":"STATUS"}"#)
            #expect(try client.decode(StatusReply.self, try client.next("STATUS")).sensors.isEmpty)
        }

        @Test func anUnreachableBoardLeavesTheDaemonRunningAndSaysWhy() throws {
            let daemon = try Self.daemon(port: try freeLoopbackPort())
            defer { daemon.signal(SIGTERM) }
            #expect(daemon.waitForLog("cannot reach the IIO context ip:127.0.0.1:"), "the listing names the unreachable context")
            let client = try TestClient(path: daemon.socket)
            _ = try client.next("VERSION")
            try client.send(#"{"class":"DEVICES"}"#)
            #expect(try client.decode(DevicesReply.self, try client.next("DEVICES")).devices.isEmpty)
        }
    }
}

@Test func networkSensorsAreLibiioNetworkURIs() throws {
    let bad = try #require(try YAMLNode.parse("network_sensors: [\"usb:1.2.3\"]", maximumNodes: 100))
    #expect(throws: Configuration.Invalid.self) { try Configuration(bad).validate(path: "motiond.conf") }
    let good = try Configuration(try #require(try YAMLNode.parse("network_sensors: [ip:board.local, \"ip:10.0.0.2:30431\"]", maximumNodes: 100)))
    try good.validate(path: "motiond.conf")
    #expect(good.networkSensors == ["ip:board.local", "ip:10.0.0.2:30431"])
}
