import Foundation
import HubTestKit
import MotionConfiguration
import MotionCore
import MotionDaemon
import Testing
import TestSupport

/// The DSU server's pad timestamps on a server in this process whose IMU is the hub test kit's
/// (`Machines.imu`, the imu-buffered fixture's bmi160), giving the scans the test feeds it, each with
/// the timestamp the test gives: no umockdev, so it runs beside the `Hardware` suite.
@Suite(.onOwnThreads) struct DSUTimestampStepBackTests {
    /// Issue 60 review, item 3: one sample stamped Int64.max ns (a driver's bad stamp), then the IMU's
    /// clock as before. Each later packet was stamped the last + 1 µs until a restart (Cemu
    /// integrates the gyroscope over those 1 µs steps); a stamp more than 1 s below the last is a
    /// clock gone back, and the packets start over from it.
    @Test func aStampFarBelowTheLastStartsTheTimestampsOver() async throws {
        let source = ScriptedSource(devices: [Machines.imu])
        let directory = NSTemporaryDirectory() + "dsu-step-back-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = MotionServer(socketPath: directory + "/motiond.sock", source: source, dsu: DSUSettings(listen: "127.0.0.1:0"))
        try await server.start()
        let port = try #require(server.dsuPort, "the DSU server has no port")
        let client = try DSUTestClient(serverPort: port)
        try client.requestPadData(.slot(0))
        try waitUntil { source.running(Machines.imu.number) != nil }
        var stamps: [UInt64] = []
        // DSU stamps are µs (the protocol's 64-bit timestamp, docs/games.md): the IIO stamp's ns / 1000.
        for time: Int64 in [1_000_000, .max, 2_000_000_000, 2_010_000_000] {
            #expect(source.feed([Machines.imu.scan(accelerometer: Vector3(x: 0, y: 0, z: 16384), at: time)], to: Machines.imu.number))
            if let pad = Hardware.DSUOnAnIMU.padData(client, within: 1) { stamps.append(pad.timestamp) }
        }
        try await server.stop()
        // The test client holds each slot's stamps to increase and keeps the last it took, so the
        // packets after the step back come as its reports, with their stamps (µs): started over.
        #expect(stamps == [1000, UInt64(Int64.max / 1000)])
        #expect(client.violations == [
            "slot 0: timestamp 2000000 µs after 9223372036854775", "slot 0: timestamp 2010000 µs after 9223372036854775",
        ])
    }
}
