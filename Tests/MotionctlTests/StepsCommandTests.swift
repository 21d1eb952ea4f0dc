import Foundation
import MotionCore
import MotionFusion
import Testing
import TestSupport

/// `motionctl steps`, `activity` and `gestures`, run as a user runs them: the built executable, real files.
@Suite struct StepsCommandTests {
    let fuse = FuseCommandTests()

    /// 20 s of a synthetic walk: 1.8 steps/s, each a vertical jolt (a raised cosine of 3 m/s²) on
    /// gravity, the device tilted 30° in the pocket; a `gx` column before the ones used, to be ignored.
    var walk: String {
        var text = "gx,t,ax,ay,az\n"
        let tilt = 30 * Double.pi / 180
        for i in 0..<(20 * 50) {
            let t = Double(i) / 50
            let phase = (t * 1.8).truncatingRemainder(dividingBy: 1)
            let jolt = phase < 0.3 ? 3 * (1 - cos(2 * .pi * phase / 0.3)) / 2 : 0
            let up = 9.81 + jolt
            text += "0,\(t),0,\(up * sin(tilt)),\(up * cos(tilt))\n"
        }
        return text
    }

    /// Runs `motionctl COMMAND` on the walk and returns the lines it wrote (the run must succeed).
    func runOnTheWalk(_ command: String) async throws -> [Substring] {
        let input = try fuse.temporaryFile("walk-\(command).csv", walk), output = try fuse.temporaryFile("\(command).csv")
        let run = try await fuse.run([command, "--input", input, "--output", output])
        #expect(run.status == 0, "\(run.output)")
        return try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n")
    }

    @Test func stepsWritesOneRowPerStepWithTheRunningCountTheLibraryCounts() async throws {
        let lines = try await runOnTheWalk("steps")
        #expect(lines.first == "t,steps")
        let rows = lines.dropFirst().map { $0.split(separator: ",") }
        #expect(rows.enumerated().allSatisfy { Int($0.element[1]) == $0.offset + 1 })

        var detector = StepDetector()
        var milliseconds: [Int64] = []
        for row in try AccelerometerTable(csv: walk).rows {
            detector.update(specificForce: row.specificForce, timestamp: row.timestamp) { milliseconds.append(($0 + 500_000) / 1_000_000) }
        }
        // Written to the millisecond.
        #expect(rows.allSatisfy { $0[0].split(separator: ".").last?.count == 3 })
        #expect(rows.map { Int64((Double($0[0])! * 1000).rounded()) } == milliseconds)
        // 36 jolts in 20 s; the first few come before the 4 s window that confirms a walk is full.
        #expect((30...36).contains(rows.count), "\(rows.count) steps")
    }

    /// Issue 40, defect 13: `steps`, `activity` and `fuse` stopped with "t does not increase" on 2 of 12
    /// real phone walks, for one repeated timestamp in 20,000 rows. The repeat is left out, as the
    /// daemon leaves it out, and counted on standard error; the steps are those of the file without it.
    @Test func aRepeatedTimestampIsLeftOutAndCountedNotRefused() async throws {
        var lines = walk.split(separator: "\n", omittingEmptySubsequences: false)
        lines.insert(lines[300], at: 301)  // row 300 again, as a phone's logger writes it twice
        let input = try fuse.temporaryFile("walk-repeat.csv", lines.joined(separator: "\n"))
        let output = try fuse.temporaryFile("steps-repeat.csv")
        let run = try await fuse.run(["steps", "--input", input, "--output", output])
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("left out 1 row whose t repeats the previous row's"), "\(run.output)")
        let steps = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n")
        #expect(steps == (try await runOnTheWalk("steps")))
    }

    @Test func activitySaysWalkingForTheWalk() async throws {
        let lines = try await runOnTheWalk("activity")
        #expect(lines.first == "t,activity,confidence")
        #expect(lines.last?.split(separator: ",")[1] == "walking", "\(lines)")
    }

    /// The walk begins a significant motion once its steps are confirmed; nothing shakes or is
    /// picked up (it never lies still).
    @Test func gesturesFindsTheWalksSignificantMotion() async throws {
        let lines = try await runOnTheWalk("gestures")
        #expect(lines.first == "t,gesture")
        let rows = lines.dropFirst().map { $0.split(separator: ",") }
        #expect(rows.map { String($0[1]) } == ["significant-motion"], "\(lines)")
        // Confirmed once six steps are counted and the 4 s window that tests the gait is full (its
        // 3 Hz low-pass and 1 s mean add a little): between 4 and 5 s; significant once the walk has
        // gone on 5 s more (SignificantMotionDetector's minimumWalk): between 9 and 10 s.
        #expect(rows.first.flatMap { Double($0[0]) }.map { (9...10).contains($0) } == true, "\(lines)")
    }

    @Test func aFileWithoutTheColumnsFailsNamingIt() async throws {
        let input = try fuse.temporaryFile("bad.csv", "t,x,y,z\n0,1,2,3\n1,1,2,3\n"), output = try fuse.temporaryFile("never.csv")
        let run = try await fuse.run(["steps", "--input", input, "--output", output])
        #expect(run.status != 0)
        #expect(run.output.contains(input) && run.output.contains("ax, ay, az"), "\(run.output)")
    }
}
