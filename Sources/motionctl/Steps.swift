import ArgumentParser
import FoundationEssentials
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

    @OptionGroup var files: AccelerometerFiles

    func run() throws {
        let table = try files.read()
        var detector = StepDetector()
        var csv = "t,steps\n"
        var count = 0
        for row in table.rows {
            detector.update(specificForce: row.specificForce, timestamp: row.timestamp) { instant in
                count += 1
                csv += "\(AccelerometerFiles.seconds(instant)),\(count)\n"
            }
        }
        try writeOutput(csv, to: files.output)
    }
}
