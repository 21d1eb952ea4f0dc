import Foundation
import MotionCore
@testable import MotionCtlCommands
import Testing

/// `motionctl view`'s batches to the page: a device at rest costs the browser one event a second; a
/// turn the page can show, an event or a reply goes at the next wake-up a fifteenth of a second or
/// more after the last batch.
@Suite struct ViewBatcherTests {
    static let start = Date(timeIntervalSinceReferenceDate: 0)
    static let accelerometer = Array(#"{"class":"ACCELEROMETER","timestamp":1,"acceleration":{"x":0.01,"y":0.02,"z":-1.0}}"#.utf8)

    /// A `MOTION` line as motiond writes it (docs/protocol.md), turned by `degrees` about z.
    static func motion(degrees: Double) -> [UInt8] {
        let q = Quaternion(angle: degrees * .pi / 180, axis: Vector3(x: 0, y: 0, z: 1))
        return Array(#"{"class":"MOTION","timestamp":1,"attitude":{"quaternion":{"x":\#(q.x),"y":\#(q.y),"z":\#(q.z),"w":\#(q.w)},"roll":0}}"#.utf8)
    }

    /// The wake-ups of one second after the first batch, each with a motion and an accelerometer
    /// sample turned by `turn(tick)` degrees; the ticks whose lines went.
    static func ticks(turn: (Int) -> Double, extra: [Int: [UInt8]] = [:]) -> [Int] {
        var batcher = ViewBatcher()
        batcher.add(motion(degrees: 0))
        #expect(batcher.take(at: start)?.count == 1, "the first lines go at once")
        var sent: [Int] = []
        for tick in 1...30 {
            batcher.add(motion(degrees: turn(tick)))
            batcher.add(accelerometer)
            if let line = extra[tick] { batcher.add(line) }
            if batcher.take(at: start + Double(tick) / ViewFeed.batchesPerSecond) != nil { sent.append(tick) }
        }
        return sent
    }

    @Test func aDeviceAtRestSendsOneBatchASecond() {
        // Within 0.05° of the attitude sent: noise of a fusion at rest, under a pixel of the model.
        #expect(Self.ticks(turn: { $0.isMultiple(of: 2) ? 0.05 : -0.03 }) == [30])
    }

    @Test func aTurnGoesFifteenTimesASecond() {
        // 0.2° a tick (6°/s): every wake-up carries a turn of at least ViewBatcher.turn.
        #expect(Self.ticks(turn: { Double($0) * 0.2 }) == Array(stride(from: 2, through: 30, by: 2)))
    }

    @Test func aSlowDriftGoesWhenItAddsUpToATurn() {
        // 0.04° a tick: the attitude sent lags until 0.1° has gathered, every third tick.
        #expect(Self.ticks(turn: { Double($0) * 0.04 }) == [3, 6, 9, 12, 15, 18, 21, 24, 27, 30])
    }

    @Test func anEventOrAReplyGoesAtOnce() {
        let orientation = Array(#"{"class":"ORIENTATION","timestamp":1,"orientation":"left-up"}"#.utf8)
        let error = Array(#"{"class":"ERROR","message":"unknown stream"}"#.utf8)
        #expect(Self.ticks(turn: { _ in 0 }, extra: [5: orientation, 12: error]) == [5, 12])
    }
}

extension ViewBatcherTests {
    /// A `HINGE` line (docs/protocol.md) at `angle` degrees in `mode`.
    static func hinge(angle: Double, mode: String) -> [UInt8] {
        Array(#"{"class":"HINGE","timestamp":1,"angle":\#(angle),"mode":"\#(mode)","display":{"x":0,"y":-0.92,"z":-0.38},"base":{"x":0,"y":0,"z":1}}"#.utf8)
    }

    @Test func aHingeAtRestSendsOneBatchASecond() {
        // A 2-in-1 at rest: motionctl watches HINGE at 0.1 s, so a line comes every third wake-up; its
        // angle's noise is no reason to send, only a change of mode (the page shows the mode in words).
        var lines: [Int: [UInt8]] = [:]
        for tick in stride(from: 1, through: 33, by: 3) { lines[tick] = Self.hinge(angle: tick.isMultiple(of: 2) ? 112.5 : 112.7, mode: "laptop") }
        lines[34] = Self.hinge(angle: 200, mode: "tent")
        var batcher = ViewBatcher()
        batcher.add(Self.hinge(angle: 112.6, mode: "laptop"))
        #expect(batcher.take(at: Self.start) != nil)
        var sent: [Int] = []
        for tick in 1...34 {
            batcher.add(Self.accelerometer)
            if let line = lines[tick] { batcher.add(line) }
            if batcher.take(at: Self.start + Double(tick) / ViewFeed.batchesPerSecond) != nil { sent.append(tick) }
        }
        // Once a second; the change to tent at the next wake-up a fifteenth of a second after the last batch.
        #expect(sent == [30, 34], "batches at ticks \(sent)")
    }
}
