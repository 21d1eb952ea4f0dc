import Foundation
import MotionConfiguration
import MotionDaemon
import Testing
import TestSupport

extension Hardware {
    /// The DSU server on a fake bmi160 (umockdev, the imu-buffered fixture: accelerometer scale
    /// 0.000598 m/s² and gyroscope scale 0.001065 rad/s per count, no mount matrix).
    @Suite struct DSUOnAnIMU {
        static let syspath = "/sys/devices/platform/spi-0/spi0.0/iio:device0"

        static func start() async throws -> (Testbed, MotionServer, Int) {
            let testbed = try Testbed()
            try testbed.add(fixture: "imu-buffered")
            let directory = NSTemporaryDirectory() + "dsu-hw-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let server = MotionServer(socketPath: directory + "/motiond.sock", dsu: DSUSettings(listen: "127.0.0.1:0"))
            try await server.start()
            guard let port = server.dsuPort else { throw TestClientError("the DSU server has no port") }
            return (testbed, server, port)
        }

        static func padData(_ client: DSUTestClient, within seconds: Double = 3) -> DSUTestClient.PadData? {
            let end = DSUTestClient.now() + Int64(seconds * 1e9)
            while DSUTestClient.now() < end {
                if case .padData(let data)? = client.receive(within: 0.1) { return data }
            }
            return nil
        }

        static func portState(_ client: DSUTestClient) throws -> Int? {
            try client.requestPortInformation(slots: [0])
            guard case .portInformation(let info)? = client.receive(within: 1) else { return nil }
            return info.state
        }

        /// The axes from the kernel's side: the IIO ABI reads +1 g of specific force along the axis
        /// that points up, and Linux userspace's frame is motiond's turned half a turn about z
        /// (docs/frames.md, measured against iio-sensor-proxy). So a bmi160 with no mount matrix
        /// lying face up (raw z = +16384 × 0.000598 m/s² = 1.0 g) must read, by Dolphin's input names
        /// (`DualShockUDPClient.cpp`: "Accel Up" = −y), Accel Up = +1 g: DSU y = −1. A turn about the
        /// chip's −x (raw x < 0) raises motiond's far edge (motiond x = −chip x): Dolphin's "Gyro
        /// Pitch Up" = +pitch, by the rate's size in °/s.
        @Test func aDeviceLyingFaceUpReadsAccelUpAndAFarEdgeRisingReadsPitchUp() async throws {
            let (testbed, server, port) = try await Self.start()
            let client = try DSUTestClient(serverPort: port)
            try client.requestPadData(.slot(0))
            try waitUntil { (try? testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("1") == true }
            let raw = -1000  // counts: 1.065 rad/s, 61.02 °/s
            var last: DSUTestClient.PadData?
            for step in 1...20 {
                try testbed.feed("/dev/iio:device0", Testbed.imuScan(accelerometer: [0, 0, 16384], gyroscope: [raw, 0, 0], time: Int64(step) * 1_000_000))
                last = Self.padData(client) ?? last
            }
            try await server.stop()
            guard let last else {
                Issue.record("no pad data: \(client.violations)")
                return
            }
            let g = 16384 * 0.000598 / 9.80665
            #expect(abs(Double(last.acceleration.x)) < 0.01 && abs(Double(last.acceleration.y) + g) < 0.01 && abs(Double(last.acceleration.z)) < 0.01,
                "\(last.acceleration): flat, face up, is (0, −1, 0) g")
            let pitch = Double(-raw) * 0.001065 * 180 / .pi
            #expect(abs(Double(last.pitch) - pitch) < 0.01 * pitch && abs(Double(last.yaw)) < 0.1 && abs(Double(last.roll)) < 0.1,
                "pitch \(last.pitch), yaw \(last.yaw), roll \(last.roll) °/s; expected pitch \(pitch)")
            #expect(client.violations.isEmpty, "\(client.violations)")
        }

        /// Unplugged, the slot says not connected and pad data stops; plugged back (a new device
        /// number), it is connected again and pad data flows, its numbers still increasing.
        @Test func anIMUUnpluggedAndReplugged() async throws {
            let (testbed, server, port) = try await Self.start()
            let client = try DSUTestClient(serverPort: port)
            #expect(try Self.portState(client) == 2)
            try client.requestPadData(.slot(0))
            try waitUntil { (try? testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("1") == true }
            try testbed.feed("/dev/iio:device0", Testbed.imuScan(accelerometer: [0, 0, 16384], gyroscope: [0, 0, 0], time: 1_000_000))
            let before = Self.padData(client)
            #expect(before != nil, "pad data before the unplug")

            testbed.remove(syspath: Self.syspath)
            try waitUntil { (try? Self.portState(client)) == 0 }

            let fixture = try Testbed.fixture("imu-buffered")
            try testbed.add(fixture.replacingOccurrences(of: "iio:device0", with: "iio:device1").replacingOccurrences(of: "trigger0", with: "trigger1")
                .replacingOccurrences(of: "dev=250:0", with: "dev=250:1"))
            try waitUntil { (try? Self.portState(client)) == 2 }
            try client.requestPadData(.slot(0))
            try waitUntil { (try? testbed.attribute("iio:device1", "buffer/enable"))?.hasPrefix("1") == true }
            try testbed.feed("/dev/iio:device1", Testbed.imuScan(accelerometer: [0, 0, 16384], gyroscope: [0, 0, 0], time: 5_000_000))
            let after = Self.padData(client)
            try await server.stop()
            #expect(after != nil, "pad data after the replug")
            if let before, let after { #expect(after.packetNumber > before.packetNumber && after.timestamp > before.timestamp) }
            #expect(client.violations.isEmpty, "\(client.violations)")
        }
    }
}
