import ArgumentParser
import FoundationEssentials
import MotionCore
import MotionFusion

/// `motionctl fuse`: runs the fusion core over a recorded IMU CSV file.
struct Fuse: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Estimate the attitude for each row of an IMU recording.",
        discussion: """
            Input: CSV with header t,ax,ay,az,gx,gy,gz,mx,my,mz (s; m/s² specific force, +9.81 up at rest; \
            rad/s; µT; mx,my,mz empty on rows without a magnetometer sample), the format of the BROAD dataset, in one right-handed frame taken as the device frame \
            (motiond's: x right, y up, z out of the screen; BROAD's IMU frame as it is). Output: t,qw,qx,qy,qz, \
            one row per input row: the rotation from that frame to East-North-Up (or, with --no-magnetometer, to an earth frame \
            with z up and an arbitrary heading).
            """)

    @Option(help: "The IMU CSV file to read.")
    var input: String

    @Option(help: "The CSV file to write.")
    var output: String

    @Flag(help: "Use the gyroscope and accelerometer only (6D).")
    var noMagnetometer = false

    @Flag(help: "Withhold the gyroscope: the fusion of a machine without one (the accelerometer's tilt and the magnetometer's heading).")
    var noGyroscope = false

    @Option(help: "Also write the gyroscope calibration per row to this CSV: t,bias_x,bias_y,bias_z,bias_sigma,resting (°/s; resting 0 or 1).")
    var calibrationOutput: String?

    @Option(help: "Also write the magnetometer's calibration per row to this CSV: t,offset_x,offset_y,offset_z,offset_error,disturbed (µT; disturbed 0 or 1: the heading correction's disturbance detector).")
    var magnetometerOutput: String?

    @Option(help: ArgumentHelp(
        "Where it was recorded, \"latitude, longitude[, altitude]\" (degrees, degrees, m): the World Magnetic Model's dip there (for today) tells the fusion which field is the Earth's, as motiond.conf's location does.",
        valueName: "place"))
    var location: String?

    @Flag(help: "Print the calibration learnt by the end (gyroscope bias and scale, magnetometer offset) to standard error.")
    var showCalibration = false

    func run() throws {
        let text = try String(contentsOfFile: input, encoding: .utf8)
        let recording: IMUTable
        do {
            recording = try IMUTable(csv: text)
        } catch {
            throw ValidationError("\(input): \(error)")
        }
        if noGyroscope && calibrationOutput != nil { throw ValidationError("--calibration-output writes the gyroscope's calibration; --no-gyroscope has none") }
        if noMagnetometer && magnetometerOutput != nil { throw ValidationError("--magnetometer-output writes the magnetometer's calibration; --no-magnetometer has none") }
        AccelerometerFiles.reportRepeats(recording.repeatedTimes, in: input)
        var fusion = noGyroscope
            ? SensorFusion(gyroscopeRate: nil, accelerometerRate: recording.rate, magnetometerRate: recording.magnetometerRate)
            : SensorFusion(gyroscopeRate: recording.rate, magnetometerRate: recording.magnetometerRate)
        if let location {
            guard let place = GeographicLocation(parsing: location) else { throw ValidationError("--location \"\(location)\" is not \"latitude, longitude[, altitude]\"") }
            let field = WorldMagneticModel.wmm2025.field(
                latitude: place.latitude, longitude: place.longitude, altitude: place.altitude,
                decimalYear: WorldMagneticModel.decimalYear(unixTime: Date().timeIntervalSince1970))
            fusion.expectedMagneticDip = field.inclination * .pi / 180
        }
        var csv = "t,qw,qx,qy,qz\n"
        csv.reserveCapacity(recording.rows.count * 64)
        var calibration = "t,bias_x,bias_y,bias_z,bias_sigma,resting\n"
        var magnetometer = "t,offset_x,offset_y,offset_z,offset_error,disturbed\n"
        let degrees = 180 / Double.pi
        let device = DeviceNumber(0)
        for row in recording.rows {
            if !noGyroscope { fusion.update(SensorSample(kind: .gyroscope, device: device, timestamp: row.timestamp, vector: row.gyroscope)) }
            fusion.update(SensorSample(kind: .accelerometer, device: device, timestamp: row.timestamp, vector: row.accelerometer))
            if !noMagnetometer, let field = row.magnetometer {
                fusion.update(SensorSample(kind: .magnetometer, device: device, timestamp: row.timestamp, vector: field))
            }
            let q = noMagnetometer ? fusion.attitudeWithoutMagnetometer : fusion.eastNorthUpAttitude
            csv += "\(row.time),\(q.w),\(q.x),\(q.y),\(q.z)\n"
            if calibrationOutput != nil {
                let b = fusion.filter.gyroscopeBias * degrees
                calibration += "\(row.time),\(b.x),\(b.y),\(b.z),\(fusion.filter.gyroscopeBiasSigma * degrees),\(fusion.filter.isResting ? 1 : 0)\n"
            }
            if magnetometerOutput != nil {
                let c = fusion.calibrator
                let error = c.offsetError.map { "\($0)" } ?? ""
                let disturbed = fusion.gyroscopeFree?.isMagneticFieldDisturbed ?? fusion.filter.isMagneticFieldDisturbed
                magnetometer += "\(row.time),\(c.offset.x),\(c.offset.y),\(c.offset.z),\(error),\(disturbed ? 1 : 0)\n"
            }
        }
        try writeOutput(csv, to: output)
        if let calibrationOutput { try writeOutput(calibration, to: calibrationOutput) }
        if let magnetometerOutput { try writeOutput(magnetometer, to: magnetometerOutput) }
        if showCalibration {
            let c = fusion.calibration
            func show(_ v: Vector3, _ k: Double, _ digits: Int) -> String {
                "(\((v.x * k).formatted(digits: digits)), \((v.y * k).formatted(digits: digits)), \((v.z * k).formatted(digits: digits)))"
            }
            var lines = "gyroscope bias: \(show(c.gyroscopeBias, 180 / .pi, 4)) °/s\n"
            if let scale = c.gyroscopeScale { lines += "gyroscope scale error: \(show(scale, 100, 3)) %\n" }
            lines += "magnetometer offset: \(show(c.magnetometerOffset, 1, 2)) µT\n"
            writeStandardError(lines)
        }
    }
}
