import Foundation
import HubTestKit
import Logging
import MotionCore
import MotionDaemon
import MotionDevices
import MotionWire
import TestSupport
import Testing

/// The daemon's own check of the gyroscope's axes, on the imu-buffered fixture's bmi160 as the hub
/// test kit describes it (`Machines.imu`: accelerometer 0.000598 m/s² and gyroscope 0.001065 rad/s per
/// count, no mount matrix: motiond's frame is the chip's turned half a turn about z, docs/frames.md),
/// fed scans of the chip turned about three axes, three times, while motion is watched, its gyroscope
/// reading `mapping` times the chip's true rate. A server in this process, no umockdev: beside the
/// `Hardware` suite, on threads of its own.
@Suite(.onOwnThreads) struct GyroscopeAxes {
    /// STATUS's verdict, and what the daemon logged by then.
    static func check(mapping: Matrix3) async throws -> (axes: StatusReply.GyroscopeAxes?, log: MessageLog) {
        let imu = Machines.imu
        let source = ScriptedSource(devices: [imu])
        let log = MessageLog()
        let server = MotionServer(socketPath: temporarySocketPath(), source: source, logger: Logger(label: "motiond") { _ in log })
        try await server.start()
        var axes: StatusReply.GyroscopeAxes?
        try await server.whileServing {
            let client = try TestClient.greeted(path: server.socketPath)
            try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.01}"#)
            _ = try client.next("WATCHING")
            try waitUntil { source.running(imu.number) != nil }
            let half = DeviceFrame.fromLinuxUserspace  // its own inverse
            var q = Quaternion(angle: 0.4, axis: Vector3(x: 1, y: 1, z: 0) * (1 / 2.0.squareRoot()))
            let up = Vector3(x: 0, y: 0, z: Units.standardGravity)
            var t: Int64 = 0
            var reads: [[SensorSample]] = []
            // Three times round: a verdict needs every axis shown (`TurnEvidence`).
            let turns = [Vector3(x: 1, y: 0, z: 0), Vector3(x: 0, y: 1, z: 0), Vector3(x: 0.6, y: -0.48, z: 0.64)]
            for axis in turns + turns + turns {
                let ω = axis * (1.2 / axis.length)
                for _ in 0..<150 {
                    q = (q * Quaternion(angle: ω.length * 0.01, axis: ω * (1 / ω.length))).normalized
                    t += 10_000_000
                    let accelerometer = half * q.conjugate.rotate(up) * (1 / 0.000598)
                    let gyroscope = mapping * (half * ω) * (1 / 0.001065)
                    // Whole counts, as the chip gives them.
                    func counts(_ v: Vector3) -> Vector3 { Vector3(x: v.x.rounded(), y: v.y.rounded(), z: v.z.rounded()) }
                    reads.append(imu.scan(accelerometer: counts(accelerometer), gyroscope: counts(gyroscope), at: t))
                }
            }
            #expect(source.feed(reads, to: imu.number))
            try waitUntil(seconds: 5) {
                guard (try? client.send(#"{"class":"STATUS"}"#)) != nil, let line = try? client.next("STATUS") else { return false }
                axes = (try? client.decode(StatusReply.self, line))?.gyroscopeAxes
                return axes != nil
            }
        }
        return (axes, log)
    }

    @Test func aGyroscopeMountedAsItsAccelerometerIsSaidToAgree() async throws {
        #expect(try await Self.check(mapping: .identity).axes == StatusReply.GyroscopeAxes(agree: true, mendingMatrix: nil))
    }

    /// The chip's gyroscope x and y swapped and z inverted: in motiond's frame (the half turn
    /// leaves this mapping as it is) its readings are mended by the mapping's inverse, its transpose.
    @Test func aGyroscopeWithSwappedAxesIsCaughtWithTheMatrixThatMendsIt() async throws {
        let mapping = Matrix3(rowMajor: [0, 1, 0, 1, 0, 0, 0, 0, -1])
        let (axes, log) = try await Self.check(mapping: mapping)
        #expect(axes == StatusReply.GyroscopeAxes(agree: false, mendingMatrix: mapping.transposed.rowMajor))
        // One chip carries both: no motiond.conf matrix can mend one without the other.
        #expect(log.contains("the gyroscope's axes disagree", about: "report it upstream"))
    }
}
