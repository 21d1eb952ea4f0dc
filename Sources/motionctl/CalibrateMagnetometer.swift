import ArgumentParser
import FoundationEssentials
import MotionClientCore
import MotionSystem
import MotionCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `motionctl calibrate magnetometer`: the compass's calibration, with the directions the field has
/// been seen from, until motiond's accuracy is high (or medium, from half the directions).
struct CalibrateMagnetometer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "magnetometer",
        abstract: "Calibrate the compass: turn the machine slowly through every direction until the accuracy is high enough.",
        discussion: """
            motiond learns the magnetometer's offsets (the machine's own magnetism) from the directions the \
            field is seen from, and keeps them across restarts; this command runs the fusion and shows the \
            share of directions seen (72 equal areas of the sphere) and the accuracy, until it is high, or \
            medium with half the directions seen. It exits 0 then, 1 if that did not happen within --timeout.
            """)

    @OptionGroup var connection: ConnectionOptions

    @Option(help: "Seconds to wait for the calibration.")
    var timeout: Double = 120

    func run() throws {
        let client = connection.client
        let coverage = Mutex(DirectionCoverage())
        // The fusion runs while someone watches motion; the raw field gives the directions.
        let watch = client.watch([.motion, .magnetometer], interval: 0.05) { result in
            guard case .success(.magnetometer(let message)) = result else { return }
            coverage.withLock { $0.add(message.magneticField) }
        }
        defer { watch.cancel() }
        print("Turn the machine slowly through every direction: screen up, down, and each edge up, away from metal.")
        let progress = ProgressLine()
        let start = Date()
        while Date().timeIntervalSince(start) < timeout {
            Syscall.sleep(nanoseconds: 500_000_000)
            let status = try reportingErrors { try client.status() }
            if status.unavailable?.streams["magnetometer"] != nil {
                writeStandardError("motionctl: this machine has no magnetometer: there is nothing to calibrate\n")
                throw ExitCode(ExitStatus.failure)
            }
            guard let calibration = status.calibration else { continue }
            // Counted again around the offset as it is now: the fields seen before it moved point
            // elsewhere from it.
            let seen = coverage.withLock { $0.fraction(around: calibration.magnetometerOffset) }
            let accuracy = calibration.magneticFieldAccuracy
            progress.show(seen, "\(Int((seen * 100).rounded())) % of directions seen, accuracy \(accuracy.rawValue)")
            // High, or medium with the field seen from half the directions: the offsets then rest on a
            // fit all round, not on an arc.
            if accuracy == .high || (accuracy == .medium && seen >= 0.5) {
                progress.finish()
                let o = calibration.magnetometerOffset
                print("calibrated: offset (\(o.x.formatted(digits: 1)), \(o.y.formatted(digits: 1)), \(o.z.formatted(digits: 1))) µT; motiond keeps it across restarts")
                return
            }
        }
        progress.finish()
        writeStandardError("motionctl: the accuracy was not high enough within \(timeout.formatted(digits: 0)) s: turn it through more directions, away from metal\n")
        throw ExitCode(ExitStatus.failure)
    }
}

/// The share of directions a field has been seen from: 72 areas of equal size on the sphere (6
/// bands of equal height, as Archimedes' hat-box theorem makes them equal, times 12 sectors), around
/// a centre (the offset) that may move while the fields come, so the raw fields are kept.
struct DirectionCoverage {
    /// The raw fields seen: at most `limit`, every other one dropped when full (20 a second for 120 s
    /// is 2,400; a longer `--timeout` thins them, and the directions they cover stay).
    private(set) var fields: [Vector3] = []
    static let limit = 8192

    mutating func add(_ field: Vector3) {
        if fields.count == Self.limit { fields = stride(from: 0, to: fields.count, by: 2).map { fields[$0] } }
        fields.append(field)
    }

    /// The fraction of the 72 areas the fields point to from `centre`, 0…1.
    func fraction(around centre: Vector3) -> Double {
        var seen = Set<Int>()
        for field in fields {
            let v = field - centre, length = v.length
            guard length > 0 else { continue }
            let u = v * (1 / length)
            let band = min(5, Int((u.z + 1) / 2 * 6))
            let sector = min(11, Int((atan2(u.y, u.x) + .pi) / (2 * .pi) * 12))
            seen.insert(band * 12 + sector)
        }
        return Double(seen.count) / 72
    }
}
