import Foundation
import MotionWire
import TestSupport
import Testing

/// What one client asks must not change what another receives, beyond the sensor rate they share.
@Suite struct ChurnTests {
    /// A client switching its gyroscope watch between 0.001 and 0.002 s 400 times, while another
    /// watches motion at 0.01 s on the bundled recording: the watcher used to get 1,210 lines/s
    /// instead of 100, 82 % repeating the previous timestamp, as every change of the fastest interval
    /// stopped and reopened the capture. Its lines must go on at its interval, each newer than the last.
    @Test func anotherClientsWatchChurnLeavesAWatchersStreamAlone() throws {
        let daemon = try ReplayDaemon()
        let watcher = try TestClient(path: daemon.socket)
        let churner = try TestClient(path: daemon.socket)
        _ = try watcher.next("VERSION")
        _ = try churner.next("VERSION")
        try watcher.send(#"{"class":"WATCH","streams":["motion"],"interval":0.01}"#)
        _ = try watcher.next("WATCHING")
        for _ in 0..<20 { _ = try watcher.next("MOTION") }

        let churn = Thread {
            for i in 0..<400 {
                try? churner.send(#"{"class":"WATCH","streams":["gyroscope"],"interval":\#(i % 2 == 0 ? "0.001" : "0.002")}"#)
                usleep(2_500)
            }
        }
        churn.start()
        var stamps: [Int64] = []
        let start = Date()
        while Date().timeIntervalSince(start) < 1.5 {
            let line = try watcher.next()
            if Wire.className(of: Array(line.utf8)) == "MOTION" { stamps.append(try watcher.decode(MotionMessage.self, line).timestamp) }
        }
        let backwards = zip(stamps, stamps.dropFirst()).filter { $0 >= $1 }.count
        #expect(backwards == 0, "\(backwards) of \(stamps.count) motions not newer than the one before")
        let rate = Double(stamps.count) / 1.5
        #expect(rate > 70 && rate < 130, "\(rate) motions/s at a 0.01 s interval")
    }
}
