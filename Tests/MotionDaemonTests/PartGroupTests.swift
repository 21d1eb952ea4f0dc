import Dispatch
import Logging
import MotionHub
import Synchronization
import Testing

@testable import MotionDaemon

/// The daemon's parts under swift-service-lifecycle: the order they start and stop in, and what a
/// failed start leaves running (nothing).
@Suite(.onOwnThreads) struct PartGroupTests {
    /// What the parts did, in order.
    final class Journal: Sendable {
        private let entries = Mutex<[String]>([])
        func record(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    struct RefusedStart: Error, Equatable {
        let part: String
    }

    /// A part that records its start and stop; it refuses to start when told to.
    final class RecordingPart: DaemonPart {
        let name: String
        let journal: Journal
        let refuses: Bool

        init(_ name: String, journal: Journal, refuses: Bool = false) {
            (self.name, self.journal, self.refuses) = (name, journal, refuses)
        }

        func start() throws {
            journal.record("start \(name)")
            if refuses { throw RefusedStart(part: name) }
        }

        func stop() throws {
            journal.record("stop \(name)")
        }
    }

    @Test func partsStartInOrderAndStopInReverse() async throws {
        let journal = Journal()
        let group = PartGroup(parts: ["hub", "socket", "mqtt", "readiness"].map { RecordingPart($0, journal: journal) }, logger: Logger(label: "test"))
        try await group.start()
        #expect(journal.all == ["start hub", "start socket", "start mqtt", "start readiness"])
        try await group.stop()
        #expect(journal.all == [
            "start hub", "start socket", "start mqtt", "start readiness",
            "stop readiness", "stop mqtt", "stop socket", "stop hub",
        ])
    }

    @Test func aPartThatFailsToStartStopsThoseStartedAndNoneAfterItStarts() async throws {
        let journal = Journal()
        let parts = [
            RecordingPart("hub", journal: journal), RecordingPart("socket", journal: journal),
            RecordingPart("metrics", journal: journal, refuses: true), RecordingPart("readiness", journal: journal),
        ]
        let group = PartGroup(parts: parts, logger: Logger(label: "test"))
        await #expect(throws: RefusedStart(part: "metrics")) { try await group.start() }
        #expect(journal.all == ["start hub", "start socket", "start metrics", "stop socket", "stop hub"])
    }

    /// A part whose start waits for something outside (30 s at most here) until `interruptStart`.
    final class WaitingPart: DaemonPart {
        let name = "bus"
        let journal: Journal
        private let interrupted = DispatchSemaphore(value: 0)

        init(journal: Journal) { self.journal = journal }

        func start() throws {
            journal.record("start \(name)")
            _ = interrupted.wait(timeout: .now() + 30)
            journal.record("started \(name)")
        }

        func interruptStart() {
            journal.record("interrupt \(name)")
            interrupted.signal()
        }

        func stop() throws { journal.record("stop \(name)") }
    }

    /// A stop asked while a part's start waits interrupts that start (issue 60, defect 9: a bus that
    /// never answered held SIGTERM 87 s): the part is stopped at once, those before it after it, and
    /// those after it never start.
    @Test func aStopDuringAStartInterruptsIt() async throws {
        let journal = Journal()
        let group = PartGroup(
            parts: [RecordingPart("hub", journal: journal), WaitingPart(journal: journal), RecordingPart("metrics", journal: journal)],
            logger: Logger(label: "test"))
        let starting = Task { try await group.start() }
        while !journal.all.contains("start bus") { try await Task.sleep(for: .milliseconds(1)) }
        let asked = ContinuousClock.now
        try await group.stop()
        let took = ContinuousClock.now - asked
        _ = try? await starting.value
        // Interrupted, not waited out: well under the part's 30 s wait (the whole suite shares 2 cores
        // and Swift's cooperative pool, which has stretched this to 6 s; without the interrupt, 30 s).
        #expect(took < .seconds(15), "\(took)")
        #expect(journal.all == ["start hub", "start bus", "interrupt bus", "started bus", "stop bus", "stop hub"])
    }
}
