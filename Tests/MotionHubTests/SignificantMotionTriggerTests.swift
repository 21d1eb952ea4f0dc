import HubTestKit
import MotionCore
import MotionDevices
import MotionWire
import Testing

@testable import MotionHub

/// `significant_motion` as Android's one-shot trigger (docs/protocol.md 1.11: "`SIGNIFICANT_MOTION` is
/// sent to every armed client once, and each is then disarmed; a second event from the chip before a
/// client re-arms sends it nothing. No `ENDED` follows … a `POLL` of it is refused"; Android's
/// report-modes page: "Upon detection of an event, the sensor deactivates itself"), on the
/// Chromebook whose `cros-ec-activity` chip (device 1) has the significant-motion sensor.
@Suite struct SignificantMotionTriggerTests {
    let chip = Machines.chromebook[1].number
    let watch = #"{"class":"WATCH","streams":["significant_motion"]}"#

    /// The SIGNIFICANT_MOTIONs `client` got.
    func fired(_ client: ScriptedHub.Client) -> Int { client.messages(of: .significantMotion).count }

    /// The chip says it fired, on the loop; returns whether it was armed to say it.
    func fire(_ scripted: ScriptedHub) async throws -> Bool {
        let (source, chip) = (scripted.source, chip)
        return try await scripted.onLoop { _ in source.push(.significantMotion, value: 1, at: 1_000_000_000, to: chip) }
    }

    /// Two armed clients get one SIGNIFICANT_MOTION each from the first event, and none from a second
    /// event of the same read; no ENDED; the chip is then disarmed (closed, once `rateSettling` has
    /// passed: `CaptureManager` keeps a chip function no longer wanted that long, so that a client
    /// toggling its trigger cannot reopen the chip in a loop; an event meanwhile reaches no one), and a
    /// client that arms again gets the next one, the other (no longer armed) nothing.
    @Test func eachArmingGetsOneSignificantMotionAndNoEnded() async throws {
        let scripted = try await ScriptedHub(devices: Machines.chromebook)
        let (a, idA) = try await scripted.connect()
        let (b, idB) = try await scripted.connect()
        #expect(try await fire(scripted) == false, "unwatched, the chip is not armed")
        try await scripted.send(line: watch, from: idA)
        try await scripted.send(line: watch, from: idB)
        #expect(scripted.source.running(chip)?.kinds == [.significantMotion])
        #expect(scripted.source.running(Machines.chromebook[0].number) == nil, "no accelerometer for the chip's trigger")
        let source = scripted.source
        let chip = chip
        try await scripted.onLoop { _ in
            // Two events in one turn of the loop: the second comes before anyone re-armed.
            source.push(.significantMotion, value: 1, at: 1_000_000_000, to: chip)
            source.push(.significantMotion, value: 1, at: 1_100_000_000, to: chip)
        }
        #expect(fired(a) == 1 && fired(b) == 1)
        #expect(a.ended.isEmpty && b.ended.isEmpty, "the message itself ends the watch")
        #expect(try await fire(scripted), "armed still, while it settles")
        #expect(fired(a) == 1 && fired(b) == 1, "while the chip settles, an event reaches no one")
        await scripted.run(for: CaptureManager.rateSettling)
        #expect(scripted.source.running(chip) == nil && scripted.source.chip(chip)?.isOpen == false, "disarmed")
        #expect(try await fire(scripted) == false)

        try await scripted.send(line: watch, from: idA)
        #expect(scripted.source.openingCount(of: chip) == 2 && scripted.source.chip(chip)?.eventsEnabled(.significantMotion) == true)
        #expect(try await fire(scripted))
        #expect(fired(a) == 2 && fired(b) == 1)
        try await scripted.shutDown()
    }

    /// The chip stays armed while one client's trigger is, and is disarmed when the last armed client
    /// leaves (here one disconnects, the other takes its watch back).
    @Test func theChipIsDisarmedWhenTheLastArmedClientLeaves() async throws {
        let scripted = try await ScriptedHub(devices: Machines.chromebook)
        let (_, idA) = try await scripted.connect()
        let (_, idB) = try await scripted.connect()
        try await scripted.send(line: watch, from: idA)
        try await scripted.send(line: watch, from: idB)
        let armed = try #require(scripted.source.chip(chip))
        try await scripted.disconnect(idA)
        #expect(armed.isOpen && armed.eventsEnabled(.significantMotion))
        try await scripted.send(line: #"{"class":"WATCH","streams":["significant_motion"],"enable":false}"#, from: idB)
        await scripted.run(for: CaptureManager.rateSettling)
        #expect(!armed.isOpen && scripted.source.running(chip) == nil)
        try await scripted.shutDown()
    }

    /// A POLL of the trigger is refused with invalid_argument: from a front end's request value by the
    /// hub with protocol.md's reason, and as a line by the decoder (a moment has no state), before the
    /// hub sees it; nothing opens either way.
    @Test func aPollOfTheTriggerIsRefused() async throws {
        let scripted = try await ScriptedHub(devices: Machines.chromebook)
        let (client, id) = try await scripted.connect()
        try await scripted.send(.poll(Request.Poll(id: .integer(3), streams: [.significantMotion])), from: id)
        #expect(client.errors.last == ErrorReply(id: .integer(3), code: .invalidArgument, message: "a significant_motion is an event with no current state: WATCH significant_motion, not POLL"))
        try await scripted.send(line: #"{"class":"POLL","id":4,"streams":["significant_motion"]}"#, from: id)
        #expect(client.errors.last?.code == .invalidArgument && client.errors.last?.id == .integer(4))
        #expect(scripted.source.openings.withLock { $0.isEmpty })
        try await scripted.shutDown()
    }

    /// A client arming and disarming its trigger 100 times in a second (review: each toggle closed and
    /// reopened the chip, with its sysfs writes and its event descriptor's ioctl) opens the chip once:
    /// a disarm waits `rateSettling`, and an arm within it finds the chip still armed.
    @Test func aClientTogglingItsTriggerDoesNotReopenTheChipEachTime() async throws {
        let scripted = try await ScriptedHub(devices: Machines.chromebook)
        let (_, id) = try await scripted.connect()
        for _ in 0..<100 {
            try await scripted.send(line: watch, from: id)
            try await scripted.send(line: #"{"class":"WATCH","streams":["significant_motion"],"enable":false}"#, from: id)
            await scripted.run(for: .milliseconds(10))
        }
        #expect(scripted.source.openingCount(of: chip) == 1)
        await scripted.run(for: CaptureManager.rateSettling)
        #expect(scripted.source.running(chip) == nil, "closed once it has settled")
        try await scripted.shutDown()
    }
}
