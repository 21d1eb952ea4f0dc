import MotionCore
import Synchronization
import Testing
import TestSupport

@testable import MotionDevices

/// A recording replayed (`motiond --replay`, docs/recording.md) is untrusted input like a device: its
/// timestamps may be any Int64 ("integer nanoseconds ... any origin"), and `SamplePlayer` must play
/// it without trapping, each sample re-stamped on this machine's clock.
@Suite(.onOwnThreads) struct HostileRecordingTests {
    /// What a player handed on.
    final class Played: Sendable {
        let samples = Mutex<[SensorSample]>([])
        let ended = Mutex(false)

        func take(_ event: SensorEvent) {
            switch event {
            case .sample(let sample): samples.withLock { $0.append(sample) }
            case .ended: ended.withLock { $0 = true }
            default: break
            }
        }
    }

    static func recording(_ stamps: [Int64]) -> [SensorSample] {
        stamps.map { SensorSample(kind: .accelerometer, device: DeviceNumber(0), timestamp: $0, vector: Vector3(x: 0, y: 0, z: 9.8)) }
    }

    /// Stamps from Int64.min to Int64.max: the first instants play at the epoch, re-stamped then; the
    /// next lies 2^62 ns later, which the player waits for (saturated) and a stop interrupts. The
    /// epoch is 1 s ahead: a player whose thread starts more than `SamplePlayer.joinTolerance` after
    /// its epoch joins where the recording is by then, past the first instants (a full suite on
    /// 2 cores delayed the thread that long).
    @Test func aRecordingSpanningEveryInt64PlaysItsFirstInstantAndStops() throws {
        let epoch = SamplePlayer.now() + 1_000_000_000
        let player = SamplePlayer(samples: Self.recording(hostileTimestamps), device: "iio:device0", epoch: epoch)
        let played = Played()
        player.start { played.take($0) }
        try waitUntil(seconds: 10) { played.samples.withLock { !$0.isEmpty } }
        player.stop()
        let samples = played.samples.withLock { $0 }
        #expect(samples.allSatisfy { $0.timestamp >= epoch && $0.timestamp <= SamplePlayer.now() }, "\(samples.map(\.timestamp))")
        // The others lie 2^62 ns or more after the first.
        #expect(samples.count == hostileTimestamps.filter { $0 <= .min + 1 }.count, "only the instants at Int64.min and 1 ns after are due")
    }

    /// Every sample at one instant: no interval to play over (a cycle of 0 ns was a division by zero).
    @Test func aRecordingOfOneInstantEndsWithoutTrapping() throws {
        let player = SamplePlayer(samples: Self.recording([5, 5, 5]), device: "iio:device0")
        let played = Played()
        player.start { played.take($0) }
        try waitUntil { played.ended.withLock { $0 } }
        player.stop()
    }
}
