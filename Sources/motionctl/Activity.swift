import ArgumentParser
import FoundationEssentials
import MotionCore
import MotionFusion

/// `motionctl activity`: runs the daemon's activity classifier over a recorded accelerometer CSV file.
struct Activity: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Classify the motion activity along an accelerometer recording.",
        discussion: """
            Input: CSV whose header has the columns t (s), ax, ay, az (m/s², specific force, any device frame); \
            other columns are ignored. Output: t,activity,confidence, a row at each change of either, t being \
            when the activity began (activity: stationary, walking, running or unknown; confidence: low, \
            medium, high); the classifier is the daemon's (docs/activity.md).
            """)

    @OptionGroup var files: AccelerometerFiles

    func run() throws {
        let table = try files.read()
        var detector = StepDetector()
        var classifier = ActivityClassifier()
        var csv = "t,activity,confidence\n"
        for row in table.rows {
            detector.update(specificForce: row.specificForce, timestamp: row.timestamp) { _ in }
            if let change = classifier.update(specificForce: row.specificForce, timestamp: row.timestamp, detector: detector) {
                csv += "\(AccelerometerFiles.seconds(change.start)),\(change.kind.rawValue),\(change.confidence.rawValue)\n"
            }
        }
        try writeOutput(csv, to: files.output)
    }
}
