import MotionCore
import MotionWire
import Testing

@testable import MotionCtlCommands

/// `motionctl view` watches the 1.11 streams where the machine has their sources (protocol.md:
/// `presence` from a human-presence sensor, else a proximity sensor; `significant_motion` from the
/// chip's sensor, else the step detector on an accelerometer), and arms the one-shot trigger again
/// after each `SIGNIFICANT_MOTION`, which ends its watch.
@Suite struct ViewFeedPresenceTests {
    static func device(_ kinds: [SensorKind]) -> DevicesReply.Device {
        DevicesReply.Device(
            device: "iio:device0", name: "test", kinds: kinds, mode: "polled", rates: nil, mountMatrix: [1, 0, 0, 0, 1, 0, 0, 0, 1],
            mountMatrixSource: "identity", location: "display", channels: [:])
    }

    static func streams(_ kinds: [SensorKind]) -> [[StreamKind]] {
        ViewFeed(socketPath: "", frame: .xArbitraryZVertical).watches(for: [device(kinds)]).map { $0.streams ?? [] }
    }

    @Test func presenceIsWatchedWhereAPresenceOrProximitySensorIs() {
        #expect(Self.streams([.humanPresence]) == [[.presence]])
        #expect(Self.streams([.proximity]) == [[.proximity, .presence]])
        #expect(Self.streams([.light]) == [[.light]])
    }

    @Test func theTriggerHasAWatchOfItsOwnAndIsArmedAgainAfterEach() {
        #expect(Self.streams([.significantMotion]) == [[.significantMotion]])
        #expect(Self.streams([.accelerometer]).last == [.significantMotion])
        #expect(ViewFeed.rearms(Array(#"{"class":"SIGNIFICANT_MOTION","timestamp":1,"source":"accelerometer"}"#.utf8)))
        #expect(!ViewFeed.rearms(Array(#"{"class":"GESTURE","timestamp":1,"gesture":"significant-motion"}"#.utf8)))
    }
}
