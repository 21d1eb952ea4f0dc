import Foundation
import Testing
import TestSupport

/// The runner every command test goes through: a stuck program must fail its test, not hang the run.
@Suite struct ProgramRunnerTests {
    @Test func aProgramThatOutlivesItsTimeLimitIsKilledAndReported() async throws {
        let seconds = "300.\(getpid())"  // a sleep no other process is having
        let marker = "sleep \(seconds)"
        let start = Date()
        await #expect(throws: ProgramTimedOut.self) {
            _ = try await runProgram("sleep", [seconds], timeLimit: 0.5)
        }
        // Well before the program's own end (300 s): the limit's timer is a task, which waits for a free
        // thread of the cooperative pool when the suites running beside it block theirs (14 s seen, and
        // 25.5 s on a loaded CI machine, which a 30 s program made indistinguishable from its end).
        #expect(Date().timeIntervalSince(start) < 200, "reported at the limit, not when the program ends")
        // Killed as the run's task group is cancelled: gone a moment later.
        var left = try await runProgram("pgrep", ["-f", marker])
        let deadline = Date().addingTimeInterval(5)
        while left.status != 1 && Date() < deadline { left = try await runProgram("pgrep", ["-f", marker]) }
        #expect(left.status == 1, "the program was killed: \(left.output)")
    }

    @Test func statusAndBothOutputsComeBack() async throws {
        let run = try await runProgram("/bin/sh", ["-c", "echo out; echo err >&2; exit 3"])
        #expect(run.status == 3 && run.output == "out\n" && run.errors == "err\n")
    }
}
