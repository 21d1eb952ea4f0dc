import Foundation
import MotionWire
import TestSupport
import Testing

/// What one client asks must not change what another receives, beyond the sensor rate they share.
@Suite(.onOwnThreads) struct ChurnTests {
    /// A client switching its gyroscope watch between 0.001 and 0.002 s 400 times, while another
    /// watches motion at 0.01 s on the bundled recording: the watcher used to get 1,210 lines/s
    /// instead of 100, 82 % repeating the previous timestamp, as every change of the fastest interval
    /// stopped and reopened the capture. Its lines must go on at its interval, each newer than the
    /// last, none lost.
    @Test func anotherClientsWatchChurnLeavesAWatchersStreamAlone() throws {
        let daemon = try ReplayDaemon()
        let watcher = try TestClient(path: daemon.socket)
        let churner = try TestClient(path: daemon.socket)
        _ = try watcher.next("VERSION")
        _ = try churner.next("VERSION")
        try watcher.send(#"{"class":"WATCH","streams":["motion"],"interval":0.01}"#)
        _ = try watcher.next("WATCHING")
        // The churn's faster rate, once: raising a sensor's rate reopens its capture, which costs the
        // other watchers the samples of the reopening (tens of milliseconds on a loaded machine). That
        // one reopen comes before the measured window; the churn after it must cause none.
        try churner.send(#"{"class":"WATCH","streams":["gyroscope"],"interval":0.001}"#)
        _ = try churner.next("WATCHING")
        _ = try churner.next("GYROSCOPE")
        for _ in 0..<20 { _ = try watcher.next("MOTION") }

        let churn = Thread {
            for i in 0..<400 where !Thread.current.isCancelled {
                try? churner.send(#"{"class":"WATCH","streams":["gyroscope"],"interval":\#(i % 2 == 0 ? "0.001" : "0.002")}"#)
                // The churn's pace, 400 changes a second, reading meanwhile what it is sent: a client
                // that reads nothing is disconnected as stuck after 10 s, and its rate going away
                // would reopen the capture.
                let until = Date().addingTimeInterval(0.0025)
                while Date() < until { _ = try? churner.next(seconds: max(0.0001, until.timeIntervalSinceNow)) }
            }
        }
        churn.start()
        // 150 motions while the churn goes on: what the mechanism promises is on their timestamps
        // (the recording's clock), whatever the machine's load does to wall time.
        var stamps: [Int64] = []
        var dropped = 0
        while stamps.count < 150 {
            switch try AnyServerMessage(line: Array(try watcher.next().utf8)) {
            case .motion(let motion): stamps.append(motion.timestamp)
            case .dropped(let message): dropped += message.count
            default: break
            }
        }
        churn.cancel()
        let gaps = zip(stamps, stamps.dropFirst()).map { Double($1 - $0) * 1e-9 }
        #expect(dropped == 0)
        #expect(gaps.allSatisfy { $0 > 0 }, "each motion newer than the one before: \(gaps)")
        // The recording's IMU runs at 285.7 Hz (3.5 ms): at a 10 ms interval the decimator sends every
        // third or second sample (10.5 or 7 ms apart) and 10 ms on average. A sample lost at a due
        // time would leave a gap of 14 ms.
        #expect(gaps.allSatisfy { $0 > 0.006 && $0 < 0.012 }, "gaps \(gaps.filter { $0 <= 0.006 || $0 >= 0.012 })")
        let mean = gaps.reduce(0, +) / Double(gaps.count)
        #expect(abs(mean - 0.01) < 0.0005, "mean gap \(mean) s at a 0.01 s interval")
    }
}
