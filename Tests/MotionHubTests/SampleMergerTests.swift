import MotionCore
import MotionDevices
import Testing

@testable import MotionHub

/// The merger's order is checked against the plain definition of time order: a stable sort of all
/// samples by timestamp (the reference), on arrival orders a real machine produces.
@Suite struct SampleMergerTests {
    static let imu = DeviceNumber(0)
    static let magnetometer = DeviceNumber(1)

    static func entry(_ kind: SensorKind, _ device: DeviceNumber, at milliseconds: Int64) -> SampleMerger.Entry {
        .init(sample: SensorSample(kind: kind, device: device, timestamp: milliseconds * 1_000_000, vector: .zero), period: 10_000_000)
    }

    /// Feeds `arrivals` in order and returns the timestamps (ms) in the order they were let through.
    static func merge(_ arrivals: [(SampleMerger.Entry, DeviceNumber)], merger: inout SampleMerger) -> [Int64] {
        var ready: [SampleMerger.Entry] = []
        for (entry, device) in arrivals { merger.add(entry, from: device, into: &ready) }
        return ready.map { $0.sample.timestamp / 1_000_000 }
    }

    /// A buffered IMU at 100 Hz delivers each scan 8 ms after its timestamp; a magnetometer polled
    /// at 25 Hz is stamped when read, so it arrives before the IMU scans that are older than it.
    @Test func aPolledMagnetometerIsFusedBetweenTheIMUScansAroundItsTime() {
        var arrivals: [(arrival: Int64, entry: SampleMerger.Entry, device: DeviceNumber)] = []
        for i in 0..<100 {
            let t = Int64(i) * 10
            arrivals.append((t + 8, Self.entry(.accelerometer, Self.imu, at: t), Self.imu))
            arrivals.append((t + 8, Self.entry(.gyroscope, Self.imu, at: t), Self.imu))
        }
        for i in 0..<26 {
            let t = Int64(i) * 40 + 3
            arrivals.append((t, Self.entry(.magnetometer, Self.magnetometer, at: t), Self.magnetometer))
        }
        arrivals.sort { $0.arrival < $1.arrival }
        var merger = SampleMerger()
        merger.pace = Self.imu
        let order = Self.merge(arrivals.map { ($0.entry, $0.device) }, merger: &merger)
        // The last magnetometer sample (1003 ms) waits for a scan after it, which never comes.
        let reference = arrivals.map { $0.entry.sample.timestamp / 1_000_000 }.sorted().filter { $0 != 1003 }
        #expect(order == reference)
        #expect(merger.heldCount == 1)
        var rest: [SampleMerger.Entry] = []
        merger.releaseAll(into: &rest)
        #expect(rest.map { $0.sample.timestamp } == [1_003_000_000])
    }

    /// Without a pace (one capture, or nothing fused) nothing waits.
    @Test func withoutAPaceEverySampleGoesThroughAtOnce() {
        var merger = SampleMerger()
        let order = Self.merge(
            [(Self.entry(.magnetometer, Self.magnetometer, at: 30), Self.magnetometer), (Self.entry(.accelerometer, Self.imu, at: 10), Self.imu)],
            merger: &merger)
        #expect(order == [30, 10])
    }

    /// The IMU stops (or runs on another clock far behind): the magnetometer's samples still go out,
    /// each at most `maximumHold` late by the magnetometer's own clock, in order and none lost.
    @Test func aStalledPaceDelaysTheOthersByABoundedAmountAndLosesNothing() {
        var merger = SampleMerger(capacity: 64, maximumHold: 100_000_000)
        merger.pace = Self.imu
        let arrivals = (0..<50).map { (Self.entry(.magnetometer, Self.magnetometer, at: Int64($0) * 40), Self.magnetometer) }
        var ready: [SampleMerger.Entry] = []
        var lateness: [Int64] = []
        for (entry, device) in arrivals {
            let before = ready.count
            merger.add(entry, from: device, into: &ready)
            for released in ready[before...] { lateness.append(entry.sample.timestamp - released.sample.timestamp) }
        }
        #expect(ready.map { $0.sample.timestamp / 1_000_000 } == (0..<47).map { Int64($0) * 40 })
        #expect(lateness.allSatisfy { $0 <= 120_000_000 }, "released within one magnetometer period of the 100 ms bound")
        #expect(merger.heldCount == 3)
    }

    /// Never more than `capacity` held, whatever the clocks do.
    @Test func theHoldIsBoundedByItsCapacity() {
        var merger = SampleMerger(capacity: 4, maximumHold: .max / 2)
        merger.pace = Self.imu
        let order = Self.merge((0..<10).map { (Self.entry(.magnetometer, Self.magnetometer, at: Int64($0)), Self.magnetometer) }, merger: &merger)
        #expect(order == [0, 1, 2, 3, 4, 5])
        #expect(merger.heldCount == 4)
    }
}
