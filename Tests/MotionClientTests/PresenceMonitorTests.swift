import Foundation
import MotionClient
import Synchronization
import TestSupport
import Testing

/// `PresenceMonitor` and `SignificantMotionTrigger` turn protocol 1.11's lines into their values:
/// checked on lines a scripted daemon sends (docs/protocol.md's `PRESENCE` and `SIGNIFICANT_MOTION`
/// examples and their rules), each reply given to every request, as the stand-in does.
@Suite(.onOwnThreads) struct PresenceMonitorTests {
    typealias Collected = CoreMotionShapesTests.Collected

    /// The presence now, then each change: an HID sensor's (protocol.md's example: present, attentive,
    /// 0.62 m), then a proximity sensor's, without attention or distance; timestamps in seconds.
    @Test func presenceUpdatesCarryAttentionAndDistanceWhereTheSensorGivesThem() throws {
        let daemon = try ScriptedDaemon(replies: [
            #"{"class":"WATCHING","id":$ID,"streams":[{"stream":"presence"}]}"#,
            #"{"class":"PRESENCE","timestamp":1234567890123,"present":true,"attention":true,"distance":0.62,"source":"human-presence"}"#,
            #"{"class":"PRESENCE","timestamp":2500000000000,"present":false,"source":"proximity"}"#,
        ])
        let monitor = PresenceMonitor(client: MotionClient(socketPath: daemon.path, timeout: 2))
        let collected = Collected<PresenceData>()
        monitor.startPresenceUpdates { data, _ in if let data { collected.add(data) } }
        defer { monitor.stopPresenceUpdates() }
        let data = collected.wait(for: 2)
        #expect(data == [
            PresenceData(timestamp: 1234.567890123, isPresent: true, isAttentive: true, distance: 0.62, source: .humanPresence),
            PresenceData(timestamp: 2500, isPresent: false, isAttentive: nil, distance: nil, source: .proximity),
        ])
    }

    /// One event per arming, as Android's one-shot trigger: the stand-in sends two after each
    /// `WATCH` (a daemon must send one; the second stands for anything after it), and only the first
    /// is handed over; arming again hands over the next arming's first. Cancelled before its event,
    /// an arming hands over nothing (the witness: a second trigger on the same daemon gets its event).
    @Test func theTriggerHandsOverOneEventPerArming() throws {
        let daemon = try ScriptedDaemon(replies: [
            #"{"class":"WATCHING","id":$ID,"streams":[{"stream":"significant_motion"}]}"#,
            #"{"class":"SIGNIFICANT_MOTION","timestamp":1234567890123,"source":"significant-motion"}"#,
            #"{"class":"SIGNIFICANT_MOTION","timestamp":1300000000000,"source":"accelerometer"}"#,
        ])
        let trigger = SignificantMotionTrigger(client: MotionClient(socketPath: daemon.path, timeout: 2))
        let collected = Collected<SignificantMotionEvent>()
        trigger.request { event, _ in if let event { collected.add(event) } }
        #expect(collected.wait(for: 1) == [SignificantMotionEvent(timestamp: 1234.567890123, source: .significantMotion)])
        trigger.request { event, _ in if let event { collected.add(event) } }
        let both = collected.wait(for: 1)  // the second arming's (the first's was waited for above)
        #expect(both.map(\.timestamp) == [1234.567890123, 1234.567890123], "one per arming: \(both)")
        // A third arming's witness: by the time it fired, a second event of the earlier armings
        // (sent on their connections before it) would have been handed over.
        let witness = Collected<SignificantMotionEvent>()
        let other = SignificantMotionTrigger(client: MotionClient(socketPath: daemon.path, timeout: 2))
        other.request { event, _ in if let event { witness.add(event) } }
        #expect(witness.wait(for: 1).count == 1)
        #expect(collected.wait(for: 0).count == 2)
    }
}
