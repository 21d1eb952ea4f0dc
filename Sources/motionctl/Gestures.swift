import ArgumentParser
import FoundationEssentials
import MotionCore
import MotionFusion

/// `motionctl gestures`: finds the daemon's gestures along a recorded accelerometer CSV file.
struct Gestures: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find shakes, pick-ups and significant motions along an accelerometer recording.",
        discussion: """
            Input: CSV whose header has the columns t (s), ax, ay, az (m/s², specific force, any device frame); \
            other columns are ignored. Output: t,gesture, a row per gesture (shake, pick-up, significant-motion) \
            at the sample that completed it; the detectors are the daemon's (docs/activity.md).
            """)

    @OptionGroup var files: AccelerometerFiles

    func run() throws {
        let table = try files.read()
        var detector = StepDetector()
        var recognizer = GestureRecognizer()
        var csv = "t,gesture\n"
        for row in table.rows {
            detector.update(specificForce: row.specificForce, timestamp: row.timestamp) { _ in }
            recognizer.update(specificForce: row.specificForce, timestamp: row.timestamp, isWalking: detector.isWalking) { gesture in
                csv += "\(AccelerometerFiles.seconds(row.timestamp)),\(gesture.rawValue)\n"
            }
        }
        try writeOutput(csv, to: files.output)
    }
}
