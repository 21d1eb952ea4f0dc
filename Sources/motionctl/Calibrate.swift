import ArgumentParser
import Foundation
import MotionClient

/// `motionctl calibrate`: the gyroscope's bias (the default), or the accelerometer's mount matrix.
struct Calibrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Calibrate the gyroscope's bias (the default), or find the accelerometer's mount matrix (mount).",
        subcommands: [CalibrateGyroscope.self, CalibrateMount.self], defaultSubcommand: CalibrateGyroscope.self)
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
        let start = Date()
        let target = StatusReply.Calibration.calibratedUncertainty * 180 / .pi
        while Date().timeIntervalSince(start) < timeout {
            Thread.sleep(forTimeInterval: 0.5)
            let status = try reportingErrors { try client.status() }
            guard let calibration = status.calibration, let sigma = calibration.gyroscopeBiasUncertainty else {
                if !status.sensors.isEmpty && status.unavailable?.streams["gyroscope"] != nil {
                    FileHandle.standardError.write(Data("motionctl: this machine has no gyroscope: there is nothing to calibrate\n".utf8))
                    throw ExitCode(ExitStatus.failure)
                }
                continue
            }
            let degrees = sigma * 180 / .pi
            let done = calibration.gyroscopeCalibrated == true
            // One line, rewritten: the uncertainty falling toward the target.
            let filled = done ? 20 : max(0, min(19, Int(20 * target / degrees)))
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: 20 - filled)
            print("\r[\(bar)] bias known within ±\(degrees.formatted(digits: 3)) °/s (target \(target.formatted(digits: 2)))", terminator: "")
            fflush(nil)  // all streams: the line has no newline yet
            if done {
                let b = calibration.gyroscopeBias * (180 / .pi)
                print("\ncalibrated: bias (\(b.x.formatted(digits: 3)), \(b.y.formatted(digits: 3)), \(b.z.formatted(digits: 3))) °/s; motiond keeps it across restarts")
                return
            }
        }
        print("")
        FileHandle.standardError.write(Data("motionctl: not calibrated within \(timeout.formatted(digits: 0)) s: was the machine still?\n".utf8))
        throw ExitCode(ExitStatus.failure)
    }
}
