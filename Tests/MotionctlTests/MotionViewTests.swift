import MotionClient
import MotionCore
import MotionWire
@testable import MotionCtlCommands
import Testing
import TestSupport

/// `motionctl watch`'s rate line counts the server's sample timestamps, which come from a device:
/// any Int64 (docs/protocol.md, timestamps).
@Suite struct MotionViewTests {
    @Test func hostileTimestampsNeitherTrapNorGrowTheRateWindow() {
        var view = MotionView()
        for t in hostileTimestamps {
            view.take(.accelerometer(AccelerometerMessage(timestamp: t, acceleration: Vector3(x: 0, y: -1, z: 0))))
            if let rate = view.rate { #expect(rate.isFinite && rate > 0) }
        }
        // Sane timestamps again: 10 updates 0.1 s apart read as 10 a second, whatever came before.
        for k in 0..<11 {
            view.take(.accelerometer(AccelerometerMessage(timestamp: 5_000_000_000 + Int64(k) * 100_000_000, acceleration: .zero)))
        }
        #expect(view.rate.map { abs($0 - 10) < 1e-9 } == true)
    }

    /// A clock that only goes back kept every update (none was older than a second before the newest):
    /// the window is one second of the current clock.
    @Test func aClockRunningBackwardsKeepsOneUpdateInTheWindow() {
        var view = MotionView()
        for k in 0..<10_000 {
            view.take(.accelerometer(AccelerometerMessage(timestamp: -Int64(k) * 1_000, acceleration: .zero)))
        }
        #expect(view.rate == nil)
        #expect(view.windowCount == 1)
    }

    /// `watch` and `get` show the streams in motionctl's order, not the catalogue's (which fixes the
    /// SNAPSHOT's keys, altitude before gesture): the gesture line before the altitude's, as before the
    /// catalogue, whichever came first.
    @Test func theGestureIsShownBeforeTheAltitude() {
        var view = MotionView()
        view.take(.altitude(AltitudeMessage(timestamp: 1, pressure: 101.325, altitude: 0, precision: nil)))
        view.take(.gesture(GestureMessage(timestamp: 2, gesture: .shake)))
        let streams = view.render().dropFirst().map { $0.prefix { $0 != " " } }
        #expect(streams == ["gesture", "altitude"])
    }

    /// `motionctl watch` shows the 1.11 streams as lines: presence with attention and distance where
    /// the message has them (docs/protocol.md's PRESENCE example: present, attentive, 0.62 m, from an
    /// HID sensor), and without them from a proximity sensor; a significant motion with its source;
    /// the chip's on-body gesture as any gesture. After the gesture, before the altitude.
    @Test func thePresenceTheSignificantMotionAndTheOnBodyGestureAreLines() {
        var view = MotionView()
        view.take(.presence(PresenceMessage(timestamp: 1_234_567_890_123, present: true, attention: true, distance: 0.62, source: .humanPresence)))
        view.take(.significantMotion(SignificantMotionMessage(timestamp: 1_234_567_890_123, source: .significantMotion)))
        view.take(.gesture(GestureMessage(timestamp: 3, gesture: .onBody)))
        view.take(.altitude(AltitudeMessage(timestamp: 4, pressure: 101.325, altitude: 0, precision: nil)))
        #expect(Array(view.render().dropFirst()) == [
            "gesture         on-body (last)",
            "sig. motion     fired (significant-motion)",
            "presence        present   attentive   0.62 m   (human-presence)",
            "altitude        0.00 m   101.3250 kPa   relative +0.00 m",
        ])
        view.take(.presence(PresenceMessage(timestamp: 5, present: false, source: .proximity)))
        #expect(view.render().contains("presence        absent   (proximity)"))
    }
}
