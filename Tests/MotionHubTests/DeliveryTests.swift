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
    /// A test's line: a number, and its size in bytes.
    struct Line: QueuedLine, Equatable, ExpressibleByIntegerLiteral {
        var number: Int
        var queuedBytes = 10

        init(_ number: Int, bytes: Int = 10) { (self.number, queuedBytes) = (number, bytes) }
        init(integerLiteral number: Int) { self.init(number) }
    }

    @Test func aFullQueueDropsTheOldestStreamMessagesAndAnnouncesHowMany() {
        var queue = DeliveryQueue<Line>(capacity: 4)
        queue.push(0, kind: .kept)  // a reply
        for i in 1...10 { queue.push(Line(i), kind: .stream(.motion)) }
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
        var queue = DeliveryQueue<Line>(capacity: 3)
        queue.push(0, kind: .stream(.accelerometer))
        // 3 fits by dropping 0; 4 finds the queue full of kept lines: reported, still queued.
        let accepted = [1, 2, 3, 4].map { queue.push(Line($0), kind: .kept) }
        #expect(accepted == [true, true, true, false])
        var lines: [Int] = []
        while let entry = queue.pop() { lines.append(entry.line.number) }
        #expect(lines == [1, 2, 3, 4])
    }

    /// Issue 40, defect 3: replies differ in size by a thousand times, so the queue keeps the bytes
    /// and the replies waiting, whatever was pushed, dropped or taken.
    @Test func theQueueCountsTheBytesAndTheRepliesWaiting() {
        var queue = DeliveryQueue<Line>(capacity: 3)
        queue.push(Line(1, bytes: 80_000), kind: .kept)
        queue.push(Line(2, bytes: 100), kind: .stream(.motion))
        queue.push(Line(3, bytes: 200), kind: .stream(.motion))
        #expect(queue.bytes == 80_300 && queue.keptCount == 1)
        queue.push(Line(4, bytes: 50), kind: .kept)  // drops 2
        #expect(queue.bytes == 80_250 && queue.keptCount == 2)
        _ = queue.pop()
        #expect(queue.bytes == 250 && queue.keptCount == 1)
        while queue.pop() != nil {}
        #expect(queue.bytes == 0 && queue.keptCount == 0)
    }

    @Test func dropsAreCountedPerStream() {
        var queue = DeliveryQueue<Line>(capacity: 2)
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
        var queue = DeliveryQueue<Line>(capacity: 256)
        for i in 0..<256_000 {
            queue.push(Line(i, bytes: 100), kind: .stream(.motion))
            if i % 3 == 0 { _ = queue.pop() }
        }
        #expect(queue.count <= 256)
    }
}
