import MotionWire
import Testing

@testable import MotionHub

@Suite struct StreamDecimatorTests {
    @Test func aClientGetsItsOwnIntervalOnTheSampleTimestamps() {
        // A 100 Hz sensor with ±0.5 ms jitter; clients at 0.01 s, 0.05 s and 0.035 s.
        let period: Int64 = 10_000_000
        let timestamps = (0..<1000).map { Int64($0) * period + ($0 % 2 == 0 ? 500_000 : -500_000) }
        func sent(_ interval: Double) -> [Int64] {
            var decimator = StreamDecimator(interval: interval)
            return timestamps.filter { decimator.accepts($0, sensorPeriod: period) }
        }
        #expect(sent(0.01).count == 1000, "asking for the sensor's period gives every sample")
        let slow = sent(0.05)
        #expect(slow.count == 200)
        #expect(zip(slow.dropFirst(), slow).allSatisfy { abs(($0 - $1) - 50_000_000) <= 1_000_000 })
        let odd = sent(0.035)
        // Gaps of 30 and 40 ms (whole sensor periods), 35 ms on average: 1000 × 10 ms / 35 ms.
        let gaps = zip(odd.dropFirst(), odd).map { $0 - $1 }
        #expect(gaps.allSatisfy { abs($0 - 30_000_000) <= 1_000_000 || abs($0 - 40_000_000) <= 1_000_000 })
        let mean = Double(odd.last! - odd.first!) / Double(gaps.count)
        #expect(abs(mean - 35_000_000) < 200_000, "mean gap \(mean) ns")
    }

    @Test func aGapInTheDataDoesNotCauseABurst() {
        var decimator = StreamDecimator(interval: 0.1)
        let period: Int64 = 10_000_000
        var sent: [Int64] = []
        for start in [Int64(0), 2_000_000_000] {
            for i in 0..<30 {
                let t = start + Int64(i) * period
                if decimator.accepts(t, sensorPeriod: period) { sent.append(t) }
            }
        }
        #expect(sent == [0, 100_000_000, 200_000_000, 2_000_000_000, 2_100_000_000, 2_200_000_000] as [Int64])
    }

    @Test func aTimestampGoingFarBackwardsRestartsTheSchedule() {
        var decimator = StreamDecimator(interval: 1)
        let results = [5_000_000_000, 5_500_000_000, 1_000].map { decimator.accepts($0, sensorPeriod: 10_000_000) }
        #expect(results == [true, false, true])
    }

    /// A sample older than one the client already has (in flight from a capture reopened meanwhile)
    /// is never sent: it used to restart the schedule and go out, so timestamps went backwards.
    @Test func aSampleOlderThanOneAlreadySentIsNeverSent() {
        var decimator = StreamDecimator(interval: 0.01)
        let stamps: [Int64] = [100_000_000, 110_000_000, 120_000_000, 105_000_000, 115_000_000, 130_000_000]
        let results = stamps.map { decimator.accepts($0, sensorPeriod: 10_000_000) }
        #expect(results == [true, true, true, false, false, true])
    }
}

@Suite struct DeliveryQueueTests {
    @Test func aFullQueueDropsTheOldestStreamMessagesAndAnnouncesHowMany() {
        var queue = DeliveryQueue<Int>(capacity: 4)
        queue.push(0, kind: .kept)  // a reply
        for i in 1...10 { queue.push(i, kind: .stream(.motion)) }
        #expect(queue.count == 4)
        #expect(queue.totalDropped == 7)
        let reply = queue.pop()!
        #expect(reply.line == 0 && reply.droppedBefore == nil)
        let first = queue.pop()!
        #expect(first.line == 8)
        #expect(first.droppedBefore?.0 == .motion && first.droppedBefore?.1 == 7)
        let second = queue.pop()!
        #expect(second.line == 9 && second.droppedBefore == nil, "announced once")
        let third = queue.pop()!
        #expect(third.line == 10)
        let none = queue.pop()
        #expect(none == nil)
    }

    @Test func repliesAndEventsAreNeverDropped() {
        var queue = DeliveryQueue<String>(capacity: 3)
        queue.push("s1", kind: .stream(.accelerometer))
        // r3 fits by dropping s1; r4 finds the queue full of kept lines: reported, still queued.
        let accepted = ["r1", "r2", "r3", "r4"].map { queue.push($0, kind: .kept) }
        #expect(accepted == [true, true, true, false])
        var lines: [String] = []
        while let entry = queue.pop() { lines.append(entry.line) }
        #expect(lines == ["r1", "r2", "r3", "r4"])
    }

    @Test func dropsAreCountedPerStream() {
        var queue = DeliveryQueue<Int>(capacity: 2)
        queue.push(1, kind: .stream(.gyroscope))
        queue.push(2, kind: .stream(.motion))
        queue.push(3, kind: .stream(.motion))  // drops 1 (gyroscope)
        queue.push(4, kind: .stream(.gyroscope))  // drops 2 (motion)
        #expect(queue.pendingDrops == [.gyroscope: 1, .motion: 1])
        let motion = queue.pop()!
        #expect(motion.line == 3 && motion.droppedBefore?.0 == .motion && motion.droppedBefore?.1 == 1)
        let gyroscope = queue.pop()!
        #expect(gyroscope.line == 4 && gyroscope.droppedBefore?.0 == .gyroscope && gyroscope.droppedBefore?.1 == 1)
    }

    @Test func memoryStaysBoundedUnderAThousandTimesTheCapacity() {
        var queue = DeliveryQueue<[UInt8]>(capacity: 256)
        for i in 0..<256_000 {
            queue.push([UInt8](repeating: UInt8(i % 256), count: 100), kind: .stream(.motion))
            if i % 3 == 0 { _ = queue.pop() }
        }
        #expect(queue.count <= 256)
    }
}
