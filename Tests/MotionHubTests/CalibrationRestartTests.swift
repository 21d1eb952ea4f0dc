import Foundation
import HubTestKit
import MotionCore
import MotionDevices
import MotionFusion
import MotionWire
import NIOCore
import Testing

@testable import MotionHub

/// What the fusion learns is kept (design.md: the hub core keeps the calibration): a gyroscope bias
/// learnt at rest is saved when the hub stops and known by the next hub on the same state directory
/// before any sample arrives. Moved from Hardware.Server.theCalibrationSurvivesARestart, whose
/// process and SIGTERM Hardware.Server's other tests still cover.
@Suite struct CalibrationRestartTests {
    @Test func theCalibrationSurvivesARestart() async throws {
        let imu = Machines.imu
        let state = NSTemporaryDirectory() + "motiond-state-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: state) }
        let first = try await ScriptedHub(devices: [imu], store: StateStore(directory: state))
        let (_, id) = try await first.connect()
        try await first.send(line: #"{"class":"WATCH","streams":["motion"],"interval":0.1}"#, from: id)
        // 20 s of 100 Hz scans at rest, face up, with a gyroscope bias of (10, −20, 5) counts: the bias converges.
        let scans = (0..<2000).map { i in
            imu.scan(accelerometer: Vector3(x: 0, y: 0, z: 16384), gyroscope: Vector3(x: 10, y: -20, z: 5), at: Int64(i + 1) * 10_000_000)
        }
        try await first.feed(scans, to: imu.number)
        try await first.shutDown()
        // (10, −20, 5) counts × 0.001065 rad/s, then into the device frame (x, y negated: docs/frames.md).
        let bias = Vector3(x: -0.01065, y: 0.0213, z: 0.005325)
        let saved = try StateStore(directory: state).load(SensorFusion.Calibration.self)
        #expect(((saved?.gyroscopeBias ?? .zero) - bias).length < 2e-4, "\(String(describing: saved))")

        // Started again, it knows the bias before any sample arrives.
        let again = try await ScriptedHub(devices: [imu], store: StateStore(directory: state))
        let (client, againID) = try await again.connect()
        try await again.send(line: #"{"class":"STATUS"}"#, from: againID)
        let status = try #require(client.statuses.last)
        #expect(((status.calibration?.gyroscopeBias ?? .zero) - bias).length < 2e-4, "\(String(describing: status.calibration))")
        try await again.shutDown()
    }
}
