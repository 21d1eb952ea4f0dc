import HubTestKit
import MotionCore
import MotionDevices
import MotionWire
import Testing

@testable import MotionHub

/// The plan takes a chip's own functions where a stream prefers them (docs/protocol.md 1.11,
/// "`pedometer` and `activity` from the chip"; `StreamKind.descriptor`'s `preferred`): a bma400's
/// step counter stands in for its accelerometer, read at the client's interval (at least 1 s), at 60 s
/// for the kept history alone; a ChromeOS EC's significant motion and on-body only while watched.
@Suite struct ChipPlanTests {
    let bma400 = [Machines.bma400]
    let wrist = Machines.bma400.number
    let display = Machines.chromebook[0].number
    let activityChip = Machines.chromebook[1].number

    /// The pedometer on a bma400 reads the chip's counter every 5 s (the client's interval) and opens
    /// no accelerometer; pedometer and activity together read both chip functions, at the shorter
    /// interval; an interval under 1 s reads every second (protocol.md: "at least 1 s").
    @Test func thePedometerOnABma400ReadsTheChipsCounterAtTheClientsIntervalAndOpensNoAccelerometer() {
        let plan = CapturePlan(demands: [.init(stream: .pedometer, interval: 5)], devices: bma400)
        #expect(plan.captures == [.init(device: wrist, kinds: [.stepCounter], rate: 0.2, chipInterval: 5)])
        let both = CapturePlan(demands: [.init(stream: .pedometer, interval: 5), .init(stream: .activity, interval: 2)], devices: bma400)
        #expect(both.captures == [.init(device: wrist, kinds: [.stepCounter, .activityRecognizer], rate: 0.5, chipInterval: 2)])
        let fast = CapturePlan(demands: [.init(stream: .pedometer, interval: 0.1)], devices: bma400)
        #expect(fast.captures.first?.chipInterval == CapturePlan.shortestChipInterval)
        #expect(plan.feeds(.pedometer, from: wrist), "the counter's device going ends the pedometer")
    }

    /// Without a step counter, or with `chip_functions: false`, the pedometer runs the accelerometer's
    /// step detector as before: 25 Hz, read once a second (CapturePlanTests' phone figures).
    @Test func withoutAChipOrWithChipFunctionsOffThePedometerRunsTheAccelerometer() {
        let software = CapturePlan.Capture(device: wrist, kinds: [.accelerometer], rate: CapturePlan.gaitRate, latency: CapturePlan.gaitLatency)
        let off = CapturePlan(demands: [.init(stream: .pedometer, interval: 5)], devices: bma400, options: .init(chipFunctions: false))
        #expect(off.captures == [software])
        let laptop = CapturePlan(demands: [.init(stream: .pedometer, interval: 5)], devices: [Machines.laptop])
        #expect(laptop.captures == [.init(device: Machines.laptop.number, kinds: [.accelerometer], rate: 25, latency: 1)])
        // Chip functions off, the kept history opens nothing at rest either.
        #expect(CapturePlan(demands: [], devices: bma400, options: .init(chipFunctions: false, keepsStepHistory: true)).captures.isEmpty)
    }

    /// With the step history kept, the chip's counter and activity are read with no one watching, every
    /// 60 s (protocol.md: "60 s while no one watches and the step history is kept"); a client's
    /// interval wins while it watches.
    @Test func theKeptHistoryReadsTheChipEverySixtySecondsWhileNoOneWatches() {
        let kept = CapturePlan.Options(keepsStepHistory: true)
        #expect(CapturePlan(demands: [], devices: bma400, options: kept).captures == [
            .init(device: wrist, kinds: [.stepCounter, .activityRecognizer], rate: 1 / 60.0, chipInterval: 60)
        ])
        #expect(CapturePlan(demands: [.init(stream: .pedometer, interval: 5)], devices: bma400, options: kept).captures.first?.chipInterval == 5)
        #expect(CapturePlan(demands: [], devices: [Machines.laptop], options: kept).captures.isEmpty, "no chip: nothing at rest, as before")
    }

    /// A device whose accelerometer a screen client reads while its counter counts has both in one
    /// capture: the accelerometer at the event rate, resting when still (only event streams sample
    /// it), the counter at the pedometer's interval.
    @Test func theAccelerometerAndTheCounterOfOneChipShareItsCapture() {
        let plan = CapturePlan(demands: [.init(stream: .orientation, interval: 1), .init(stream: .pedometer, interval: 10)], devices: bma400)
        #expect(plan.captures == [
            .init(
                device: wrist, kinds: [.accelerometer, .stepCounter], rate: CapturePlan.eventRate, latency: CapturePlan.eventLatency,
                restsWhenStill: true, chipInterval: 10)
        ])
    }

    /// Significant motion reads the EC's chip alone (no accelerometer), only while demanded; `gesture`
    /// adds the EC's on-body to the accelerometer, which it needs (the chip's going ends no gesture).
    @Test func significantMotionAndOnBodyAreReadFromTheChipOnlyWhileWatched() {
        let chromebook = Machines.chromebook
        #expect(CapturePlan(demands: [], devices: chromebook).captures.isEmpty)
        let trigger = CapturePlan(demands: [.init(stream: .significantMotion, interval: 1)], devices: chromebook)
        #expect(trigger.captures == [
            .init(device: activityChip, kinds: [.significantMotion], rate: 1 / CapturePlan.eventChipInterval, chipInterval: CapturePlan.eventChipInterval)
        ])
        #expect(trigger.feeds(.significantMotion, from: activityChip))
        let gesture = CapturePlan(demands: [.init(stream: .gesture, interval: 1)], devices: chromebook)
        #expect(gesture.captures.map(\.kinds) == [[.accelerometer], [.onBody]])
        #expect(!gesture.feeds(.gesture, from: activityChip) && gesture.feeds(.gesture, from: display))
        let off = CapturePlan(demands: [.init(stream: .significantMotion, interval: 1), .init(stream: .gesture, interval: 1)], devices: chromebook, options: .init(chipFunctions: false))
        #expect(off.captures.map(\.kinds) == [[.accelerometer]], "chip functions off: the step detector's significant motion and gestures")
    }

    /// A stream with a preferred source names it beside the required one in its reason
    /// (protocol.md's wording for `unavailable`, "needs a sensor this machine does not have: …").
    @Test func theReasonNamesThePreferredSourceAsAnAlternative() {
        let unavailable = CapturePlan.unavailable(on: [Machines.laptop])
        #expect(unavailable?.streams["presence"] == "presence needs a sensor this machine does not have: human-presence or proximity")
        #expect(unavailable?.streams["significant_motion"] == nil, "the accelerometer's step detector gives it")
        let none = CapturePlan.reasons(for: [.significantMotion], devices: [Machines.gyroscopeOnly])
        #expect(none == "significant_motion needs a sensor this machine does not have: significant-motion or accelerometer")
    }

    /// The hub: a pedometer client on a bma400 opens the chip's counter alone (interval 5 s), STATUS
    /// says the steps come from the step counter and lists the chip as read at its events; with
    /// `chip_functions: false` the accelerometer opens and STATUS says so (protocol.md 1.11, STATUS).
    @Test func theHubOpensTheCounterAloneAndStatusSaysWhatCounts() async throws {
        for chipFunctions in [true, false] {
            let scripted = try await ScriptedHub(devices: bma400, chipFunctions: chipFunctions)
            scripted.source.readings.withLock { $0[.stepCounter] = Vector3(x: 1200, y: 0, z: 0) }
            let (client, id) = try await scripted.connect()
            try await scripted.send(line: #"{"class":"STATUS","id":1}"#, from: id)
            #expect(client.statuses.last?.pedometer == nil && client.statuses.last?.activity == nil, "nothing counts before a watch")
            try await scripted.send(line: #"{"class":"WATCH","streams":["pedometer"],"interval":5}"#, from: id)
            let opening = try #require(scripted.source.running(wrist))
            try await scripted.send(line: #"{"class":"STATUS","id":2}"#, from: id)
            let status = try #require(client.statuses.last)
            if chipFunctions {
                #expect(opening.kinds == [.stepCounter] && opening.chipInterval == 5)
                #expect(status.pedometer == StatusReply.Source(source: "step-counter", device: "iio:device0"))
                #expect(status.activity == nil, "the chip's classes are not read for the pedometer alone")
                #expect(status.sensors.map(\.kinds) == [[.stepCounter]] && status.sensors.first?.mode == "events")
            } else {
                #expect(opening.kinds == [.accelerometer] && opening.chipInterval == nil)
                #expect(status.pedometer == StatusReply.Source(source: "accelerometer", device: "iio:device0"))
                #expect(status.activity == StatusReply.Source(source: "accelerometer", device: "iio:device0"))
            }
            try await scripted.shutDown()
        }
    }
}
