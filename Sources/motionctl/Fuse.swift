import ArgumentParser
import Foundation
import MotionCore
import MotionFusion

/// `motionctl fuse`: runs the fusion core over a recorded IMU CSV file.
struct Fuse: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Estimate the attitude for each row of an IMU recording.",
        discussion: """
            Input: CSV with header t,ax,ay,az,gx,gy,gz,mx,my,mz (s; m/s² specific force, +9.81 up at rest; \
            rad/s; µT), the format of the BROAD dataset. Output: t,qw,qx,qy,qz, one row per input row: the \
            rotation from the sensor frame to East-North-Up (or, with --no-magnetometer, to an earth frame \
            with z up and an arbitrary heading).
            """)

    @Option(help: "The IMU CSV file to read.")
    var input: String

    @Option(help: "The CSV file to write.")
    var output: String

    @Flag(help: "Use the gyroscope and accelerometer only (6D).")
    var noMagnetometer = false

    func run() throws {
        let recording = try IMURecording(contentsOf: input)
        var fusion = SensorFusion(gyroscopeRate: recording.rate)
        var text = "t,qw,qx,qy,qz\n"
        text.reserveCapacity(recording.rows.count * 64)
        let device = DeviceNumber(0)
        for row in recording.rows {
            fusion.update(SensorSample(kind: .gyroscope, device: device, timestamp: row.timestamp, vector: row.gyroscope))
            fusion.update(SensorSample(kind: .accelerometer, device: device, timestamp: row.timestamp, vector: row.accelerometer))
            if !noMagnetometer {
                fusion.update(SensorSample(kind: .magnetometer, device: device, timestamp: row.timestamp, vector: row.magnetometer))
            }
            let q = noMagnetometer ? fusion.filter.attitudeWithoutMagnetometer : fusion.filter.attitude
            text += "\(row.time),\(q.w),\(q.x),\(q.y),\(q.z)\n"
        }
        try text.write(toFile: output, atomically: true, encoding: .utf8)
    }
}

/// A recording in the BROAD CSV format.
struct IMURecording {
    struct Row {
        var time: Double
        var timestamp: Int64
        var accelerometer: Vector3
        var gyroscope: Vector3
        var magnetometer: Vector3
    }

    var rows: [Row] = []

    /// The sampling rate, Hz, from the median interval between rows.
    var rate: Double {
        guard rows.count > 2 else { return 100 }
        let intervals = zip(rows.dropFirst(), rows).map { $0.time - $1.time }.sorted()
        return 1 / intervals[intervals.count / 2]
    }

    init(contentsOf path: String) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var lines = text.split(whereSeparator: \.isNewline).makeIterator()
        guard let header = lines.next(), header.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) })
            == ["t", "ax", "ay", "az", "gx", "gy", "gz", "mx", "my", "mz"]
        else {
            throw ValidationError("\(path): the header must be t,ax,ay,az,gx,gy,gz,mx,my,mz")
        }
        var number = 1
        while let line = lines.next() {
            number += 1
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map { Double($0) }
            guard fields.count == 10, let t = fields[0] else {
                throw ValidationError("\(path):\(number): expected 10 numbers")
            }
            let v = fields.map { $0 ?? .nan }
            rows.append(Row(
                time: t, timestamp: Int64((t * 1e9).rounded()),
                accelerometer: Vector3(x: v[1], y: v[2], z: v[3]),
                gyroscope: Vector3(x: v[4], y: v[5], z: v[6]),
                magnetometer: Vector3(x: v[7], y: v[8], z: v[9])))
        }
    }
}
