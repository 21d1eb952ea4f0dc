import Foundation
import MotionCore
import MotionDevices
import MotionWire
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension Hardware {
    /// The daemon's own check of the gyroscope's axes, on the imu-buffered bmi160 (accelerometer
    /// 0.000598 m/s² and gyroscope 0.001065 rad/s per count, no mount matrix: motiond's frame is the
    /// chip's turned half a turn about z, docs/frames.md) turned about three axes, three times, while motion is
    /// watched, its gyroscope reading `mapping` times the chip's true rate.
    @Suite struct GyroscopeAxes {
        /// STATUS's verdict, and the daemon's log by then.
        static func check(mapping: Matrix3) throws -> (axes: StatusReply.GyroscopeAxes?, log: String) {
            let testbed = try Testbed()
            try testbed.add(fixture: "imu-buffered")
            let daemon = try DaemonProcess(socket: temporarySocketPath())
            let client = try TestClient.greeted(path: daemon.socket)
            try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.01}"#)
            _ = try client.next("WATCHING")
            try waitUntil { (try? testbed.attribute("iio:device0", "buffer/enable"))?.hasPrefix("1") == true }
            let half = DeviceFrame.fromLinuxUserspace  // its own inverse
            var q = Quaternion(angle: 0.4, axis: Vector3(x: 1, y: 1, z: 0) * (1 / 2.0.squareRoot()))
            let up = Vector3(x: 0, y: 0, z: Units.standardGravity)
            var t: Int64 = 0
            // Three times round: a verdict needs every axis shown (`TurnEvidence`).
            let turns = [Vector3(x: 1, y: 0, z: 0), Vector3(x: 0, y: 1, z: 0), Vector3(x: 0.6, y: -0.48, z: 0.64)]
            for axis in turns + turns + turns {
                let ω = axis * (1.2 / axis.length)
                for _ in 0..<150 {
                    q = (q * Quaternion(angle: ω.length * 0.01, axis: ω * (1 / ω.length))).normalized
                    t += 10_000_000
                    let accelerometer = half * q.conjugate.rotate(up) * (1 / 0.000598)
                    let gyroscope = mapping * (half * ω) * (1 / 0.001065)
                    try testbed.feed("/dev/iio:device0", Testbed.imuScan(
                        accelerometer: [accelerometer.x, accelerometer.y, accelerometer.z].map { Int($0.rounded()) },
                        gyroscope: [gyroscope.x, gyroscope.y, gyroscope.z].map { Int($0.rounded()) }, time: t))
                }
            }
            var axes: StatusReply.GyroscopeAxes?
            try waitUntil(seconds: 5) {
                guard (try? client.send(#"{"class":"STATUS"}"#)) != nil, let line = try? client.next("STATUS") else { return false }
                axes = (try? client.decode(StatusReply.self, line))?.gyroscopeAxes
                return axes != nil
            }
            daemon.signal(SIGTERM)
            return (axes, daemon.finalLog())
        }

        @Test func aGyroscopeMountedAsItsAccelerometerIsSaidToAgree() throws {
            #expect(try Self.check(mapping: .identity).axes == StatusReply.GyroscopeAxes(agree: true, mendingMatrix: nil))
        }

        /// The chip's gyroscope x and y swapped and z inverted: in motiond's frame (the half turn
        /// leaves this mapping as it is) its readings are mended by the mapping's inverse, its transpose.
        @Test func aGyroscopeWithSwappedAxesIsCaughtWithTheMatrixThatMendsIt() throws {
            let mapping = Matrix3(rowMajor: [0, 1, 0, 1, 0, 0, 0, 0, -1])
            let (axes, log) = try Self.check(mapping: mapping)
            #expect(axes == StatusReply.GyroscopeAxes(agree: false, mendingMatrix: mapping.transposed.rowMajor))
            // One chip carries both: no motiond.conf matrix can mend one without the other.
            #expect(log.contains("the gyroscope's axes disagree") && log.contains("report it upstream"), "\(log)")
        }
    }
}
