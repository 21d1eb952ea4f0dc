import Foundation
import MotionCore
import MotionFusion
import TestSupport
import Testing

/// BROAD's development trials beside the checkout, nil where they are not.
private let broadTrials: [URL]? = {
    let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../../shared/data/broad-dev").standardized
    let files = (try? FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil))?
        .filter { $0.lastPathComponent.hasSuffix("_imu.csv.gz") }.sorted { $0.path < $1.path }
    return files?.isEmpty == false ? files : nil
}()

/// The axis checks on real turns: BROAD's eleven development trials (../shared/data/broad-dev, one
/// IMU moved by hand, its accelerometer, gyroscope and magnetometer in one frame), each fed as
/// recorded and with the gyroscope's (or the magnetometer's) readings mapped otherwise. As recorded
/// the axes agree, so any verdict but `agree` is wrong; mapped by M, the only right one is the
/// inverse, Mᵀ. Judged per sample, the gyroscope check called eight of the eleven trials as recorded
/// wrong (the demo's trial among them): the accelerometer's noise, not the turns, decided.
///
/// Credit: D. Laidig, M. Caruso, A. Cereatti, T. Seel, "BROAD — A Benchmark for Robust Inertial
/// Orientation Estimation", Data 6(7):72, 2021, CC BY 4.0.
@Suite(.enabled(if: broadTrials != nil, "BROAD's trials are not beside the checkout (../shared/data/broad-dev)"))
struct AxisChecksOnRealTurnsTests {
    static func rows(of trial: URL) throws -> [IMUTable.Row] {
        let zcat = Process()
        zcat.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        zcat.arguments = ["zcat", trial.path]
        let output = Pipe()
        zcat.standardOutput = output
        try zcat.runWithSteadyEnvironment()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        zcat.waitUntilExit()
        return try IMUTable(csv: text).rows
    }

    /// A turn of the axes and a mirror image.
    static let mappings = [Matrix3(rowMajor: [0, 1, 0, 1, 0, 0, 0, 0, -1]), Matrix3(rowMajor: [1, 0, 0, 0, 1, 0, 0, 0, -1])]

    @Test func noTrialGivesAWrongVerdictAndMostGiveTheRightOne() throws {
        var gyroscopeVerdicts = 0, magnetometerVerdicts = 0
        for trial in try #require(broadTrials) {
            let rows = try Self.rows(of: trial)
            var gyroscope = [GyroscopeAxisCheck()] + Self.mappings.map { _ in GyroscopeAxisCheck() }
            var magnetometer = [MagnetometerAxisCheck()] + Self.mappings.map { _ in MagnetometerAxisCheck() }
            for index in magnetometer.indices { magnetometer[index].fieldPointsDown = true }  // Germany: 65° below the horizon
            for row in rows {
                // The first verdict is the one the daemon keeps (it ends the check): no sample after it.
                for (index, mapping) in ([Matrix3.identity] + Self.mappings).enumerated() {
                    if gyroscope[index].verdict == nil {
                        gyroscope[index].update(specificForce: row.accelerometer, rotationRate: mapping * row.gyroscope, at: row.timestamp)
                    }
                    if magnetometer[index].verdict == nil, let field = row.magnetometer {
                        magnetometer[index].update(field: mapping * field, rotationRate: row.gyroscope, specificForce: row.accelerometer, at: row.timestamp)
                    }
                }
            }
            let name = trial.lastPathComponent
            for (index, mapping) in ([Matrix3.identity] + Self.mappings).enumerated() {
                let right: AxesVerdict = index == 0 ? .agree : .disagree(mapping.transposed)
                if let verdict = gyroscope[index].verdict {
                    #expect(verdict == right, "\(name): the gyroscope mapped by \(mapping.rowMajor)")
                    gyroscopeVerdicts += 1
                }
                if let verdict = magnetometer[index].verdict {
                    #expect(verdict == right, "\(name): the magnetometer mapped by \(mapping.rowMajor)")
                    magnetometerVerdicts += 1
                }
            }
        }
        // Measured: four trials turn about enough axes without accelerating for the gyroscope's
        // verdict, ten for the magnetometer's (the field is not tilted by accelerations; trial 32
        // carries a magnet, whose field turns with the device).
        #expect(gyroscopeVerdicts >= 4 * 3 && magnetometerVerdicts >= 10 * 3, "\(gyroscopeVerdicts) and \(magnetometerVerdicts) verdicts")
    }
}
