import Foundation
import MotionClient
import MotionCore
import MotionWire
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The reference for the screen orientation is the real iio-sensor-proxy (Debian's, run with its
/// `monitor-sensor` on a private system bus), on the same umockdev accelerometer as motiond: while
/// the fixture turns through every orientation, both must report the same sequence. No copy of its
/// logic stands in for it: the expected sequence is what it printed. Moved from
/// `Hardware.IIOSensorProxyAgreement` (issue 61): iio-sensor-proxy and motiond run side by side under
/// one umockdev-run (`ChildTestbed.daemon(beside:)`), and the poses are written in their testbed by the
/// shell beside them (`AttributeWriter`), so the test process makes no testbed; one case at a time, as
/// in `Hardware`, each holding poses for two daemons polling in real time.
@Suite(.serialized, .onOwnThreads) struct IIOSensorProxyAgreement {
    /// One polled accelerometer, iio-sensor-proxy's scale (0.00980665 m/s² per count), and how its
    /// mount matrix is given.
    struct Fixture: CustomTestStringConvertible, Sendable {
        var label: String
        var name: String
        /// Extra `E:` (udev) and `A:` (sysfs) lines.
        var extra: [String]
        /// The mount matrix as written (identity when none), to turn each pose into raw counts.
        var matrix: Matrix3
        var testDescription: String { label }
    }

    static let fixtures: [Fixture] = [
        Fixture(label: "iio-sensor-proxy's own fake accelerometer, no matrix", name: "IIO Test Accelerometer", extra: [], matrix: .identity),
        // The most common entry of Debian 12's 60-sensor.hwdb (42 of 207), determinant −1.
        Fixture(label: "hwdb mirror matrix (Bosch BMA250E tablet)", name: "bma250e",
                extra: ["E: ACCEL_MOUNT_MATRIX=0, -1, 0; -1, 0, 0; 0, 0, 1"], matrix: Matrix3(rowMajor: [0, -1, 0, -1, 0, 0, 0, 0, 1])),
        // A base accelerometer of a 2-in-1 in the hwdb (six entries): it mixes z into y.
        Fixture(label: "hwdb matrix that mixes z", name: "bmc150_accel",
                extra: ["E: ACCEL_MOUNT_MATRIX=-0, -1, 0; 0, 0, -1; 1, 0, 0"], matrix: Matrix3(rowMajor: [0, -1, 0, 0, 0, -1, 1, 0, 0])),
        // A phone's device-tree matrix in sysfs.
        Fixture(label: "sysfs in_accel_mount_matrix (phone)", name: "mxc4005",
                extra: ["A: in_accel_mount_matrix=0, 1, 0; -1, 0, 0; 0, 0, 1\\n"], matrix: Matrix3(rowMajor: [0, 1, 0, -1, 0, 0, 0, 0, 1])),
    ]

    /// The poses, as Linux userspace's frame reads them (counts): normal, left-up, bottom-up,
    /// right-up, normal (`orientations`), each held until both daemons have said it.
    static let poses: [Vector3] = [
        Vector3(x: 0, y: -1000, z: 100), Vector3(x: 1000, y: 0, z: 100), Vector3(x: 0, y: 1000, z: 100),
        Vector3(x: -1000, y: 0, z: 100), Vector3(x: 0, y: -1000, z: 100),
    ]
    static let orientations = ["normal", "left-up", "bottom-up", "right-up", "normal"]

    /// Moved from `Hardware.IIOSensorProxyAgreement` (issue 61).
    @Test(arguments: fixtures)
    func motiondReportsTheOrientationsIIOSensorProxyReports(fixture: Fixture) async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/iio-sensor-proxy") else {
            Issue.record("iio-sensor-proxy is not installed (Debian package iio-sensor-proxy; scripts/install-debian-packages --tests installs it)")
            return
        }
        // The raw counts that the matrix as written turns into the pose: raw = Mᵀ × pose (M is orthogonal).
        func raw(_ pose: Vector3) -> Vector3 { fixture.matrix.transposed * pose }
        let first = raw(Self.poses[0])
        let machine = try ChildTestbed(devices: ([
            "P: /devices/platform/accelerometer/iio:device0", "N: iio:device0", "E: SUBSYSTEM=iio", "E: DEVTYPE=iio_device",
            "E: IIO_SENSOR_PROXY_TYPE=iio-poll-accel",
        ] + fixture.extra + [
            "A: name=\(fixture.name)\\n", "A: in_accel_x_raw=\(Int(first.x))\\n", "A: in_accel_y_raw=\(Int(first.y))\\n",
            "A: in_accel_z_raw=\(Int(first.z))\\n", "A: in_accel_scale=0.00980665\\n",
        ]).joined(separator: "\n") + "\n")
        let bus = try PrivateSystemBus()
        let monitor = try Peer("/usr/bin/monitor-sensor", bus: bus)
        // iio-sensor-proxy reads the same testbed as motiond: it starts beside it, and dies with it.
        let proxy = "env DBUS_SYSTEM_BUS_ADDRESS='\(bus.address)' /usr/sbin/iio-sensor-proxy > '\(bus.directory)/iio-sensor-proxy.out' 2>&1"
        let testbed = try AttributeWriter()
        let daemon = try machine.daemon(
            socket: temporarySocketPath(), arguments: ["--state-directory", bus.directory + "/state"], writer: testbed, beside: [proxy])
        let client = try TestClient(path: daemon.socket)
        _ = try client.next("VERSION")
        try client.send(#"{"class":"WATCH","streams":["orientation"]}"#)
        _ = try client.next("WATCHING")
        // monitor-sensor prints "=== Has accelerometer (orientation: X)" and then each
        // "Accelerometer orientation changed: X".
        func reference() -> [String] {
            var reference: [String] = []
            for line in monitor.output.split(separator: "\n") {
                for marker in ["orientation changed: ", "(orientation: "] {
                    guard let range = line.range(of: marker) else { continue }
                    let state = line[range.upperBound...].trimmingCharacters(in: CharacterSet(charactersIn: ") "))
                    if state != "undefined" && reference.last != state { reference.append(state) }
                }
            }
            return reference
        }
        // Each pose is held until both have said it (iio-sensor-proxy polls every 700 ms), or 10 s.
        var motiond: [String] = []
        func collect(until orientations: Int) {
            let expected = Self.orientations[orientations - 1]
            let end = Date().addingTimeInterval(10)
            while Date() < end, motiond.last != expected || reference().count < orientations {
                guard let line = try? client.next("ORIENTATION", seconds: 0.05),
                    let message = try? client.decode(OrientationMessage.self, line) else { continue }
                motiond.append(message.orientation.rawValue)
            }
        }
        collect(until: 1)
        for (index, pose) in Self.poses.enumerated().dropFirst() {
            let counts = raw(pose)
            for (axis, value) in [("x", counts.x), ("y", counts.y), ("z", counts.z)] {
                testbed.set("iio:device0", "in_accel_\(axis)_raw", "\(Int(value.rounded()))")
            }
            collect(until: index + 1)
        }
        daemon.signal(SIGTERM)
        monitor.stop()

        // The fixture did turn through every orientation, by iio-sensor-proxy's account.
        #expect(reference() == Self.orientations, "monitor-sensor printed: \(monitor.output)")
        #expect(motiond == reference(), "iio-sensor-proxy: \(reference())")
    }
}
