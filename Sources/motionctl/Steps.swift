import ArgumentParser
import Foundation
import MotionCore
import MotionFusion

/// `motionctl steps`: runs the daemon's step detector over a recorded accelerometer CSV file.
struct Steps: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Count the steps in an accelerometer recording.",
        discussion: """
            Input: CSV whose header has the columns t (s), ax, ay, az (m/s², specific force, any device frame); \
            other columns are ignored, so a BROAD recording reads as it is. Output: t,steps, one row per step \
            counted, with the running count; the step detector is the daemon's (docs/activity.md).
            """)

    @Option(help: "The accelerometer CSV file to read.")
    var input: String

    @Option(help: "The CSV file to write.")
    var output: String

    func run() throws {
        let table = try AccelerometerTable.read(input)
        var detector = StepDetector()
        var csv = "t,steps\n"
        var count = 0
        for row in table.rows {
            detector.update(specificForce: row.specificForce, timestamp: row.timestamp) { instant in
                count += 1
                csv += "\(Double(instant) * 1e-9),\(count)\n"
            }
        }
        try csv.write(toFile: output, atomically: true, encoding: .utf8)
    }
}

extension AccelerometerTable {
    /// Reads and parses `path`; errors name the file.
    static func read(_ path: String) throws -> AccelerometerTable {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ValidationError("\(path): cannot read: \(error.localizedDescription)")
        }
        do {
            return try AccelerometerTable(csv: text)
        } catch {
            throw ValidationError("\(path): \(error)")
        }
    }
}
