import ArgumentParser
import FoundationEssentials
import MotionClientCore
import MotionSystem

#if canImport(Glibc)
import Glibc
#endif

/// `motionctl calibrate`: the gyroscope's bias (the default), or the accelerometer's mount matrix.
struct Calibrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Calibrate the gyroscope's bias (the default) or the compass (magnetometer), or find the accelerometer's mount matrix (mount).",
        subcommands: [CalibrateGyroscope.self, CalibrateMagnetometer.self, CalibrateMount.self], defaultSubcommand: CalibrateGyroscope.self)
}

/// `motionctl calibrate gyroscope`: the gyroscope's bias learnt while the machine lies still, with progress.
struct CalibrateGyroscope: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gyroscope",
        abstract: "Learn the gyroscope's bias: set the machine down, keep it still, and wait for \"calibrated\".",
        discussion: """
            motiond learns the bias at every rest and keeps it across restarts; this command only runs the \
            fusion and shows the learning until the bias is known within 0.05 °/s (a yaw drift at rest of \
            at most 3° a minute). It exits 0 once calibrated, 1 if that did not happen within --timeout.
            """)

    @OptionGroup var connection: ConnectionOptions

    @Option(help: "Seconds to wait for the calibration.")
    var timeout: Double = 60

    func run() throws {
        let client = connection.client
        // The fusion runs while someone watches motion.
        let watch = client.watch([.motion], interval: 0.1) { _ in }
        defer { watch.cancel() }
        print("Set the machine down on a table and keep it still.")
        let progress = ProgressLine()
        let start = Date()
        let target = StatusReply.Calibration.calibratedUncertainty * 180 / .pi
        while Date().timeIntervalSince(start) < timeout {
            Syscall.sleep(nanoseconds: 500_000_000)
            let status = try reportingErrors { try client.status() }
            guard let calibration = status.calibration, let sigma = calibration.gyroscopeBiasUncertainty else {
                if !status.sensors.isEmpty && status.unavailable?.streams["gyroscope"] != nil {
                    writeStandardError("motionctl: this machine has no gyroscope: there is nothing to calibrate\n")
                    throw ExitCode(ExitStatus.failure)
                }
                continue
            }
            let degrees = sigma * 180 / .pi
            let done = calibration.gyroscopeCalibrated == true
            // The bias is a mean of the rate at rest: its uncertainty falls as 1/√t, so the time still
            // needed is the time so far × ((σ / target)² − 1).
            let elapsed = Date().timeIntervalSince(start)
            let needed = done ? 0 : elapsed * (pow(degrees / target, 2) - 1)
            progress.show(
                done ? 1 : min(0.99, target / degrees),
                "bias known within ±\(degrees.formatted(digits: 3)) °/s (target \(target.formatted(digits: 2))), about \(Int(needed.rounded())) s to go")
            if done {
                progress.finish()
                let b = calibration.gyroscopeBias * (180 / .pi)
                print("calibrated: bias (\(b.x.formatted(digits: 3)), \(b.y.formatted(digits: 3)), \(b.z.formatted(digits: 3))) °/s; motiond keeps it across restarts")
                return
            }
        }
        progress.finish()
        writeStandardError("motionctl: not calibrated within \(timeout.formatted(digits: 0)) s: was the machine still?\n")
        throw ExitCode(ExitStatus.failure)
    }
}
