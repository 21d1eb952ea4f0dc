import Foundation
import MotionClient
import MotionWire
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

extension DaemonLoad {
    /// Issue 40's HISTORY attack: a week of 4,096 activities in the state directory, so that each
    /// `HISTORY activity` reply over the week is its largest (1,024 activities, about 79 KB); a client
    /// watching motion at 100 Hz throughout. Then (1) 40 clients each send 250 such requests and read
    /// nothing: the daemon's RSS while they wait, how long until each is disconnected, and after they
    /// leave; (2) one client pipelines 250 and reads them all: how long it takes. The watcher's largest
    /// latency (IIO timestamp to receipt) over each says whether the loop stalled.
    func history(executable: String, testbed: Testbed) throws {
        let week = 7 * 86_400.0
        let now = Date().timeIntervalSince1970
        let kinds: [MotionActivityKind] = [.stationary, .walking, .running, .unknown]
        let activities = (0..<4096).map { i in
            HistoryReply.Activity(activity: kinds[i % 4], confidence: .high, start: now - week + Double(i) * week / 4096)
        }
        struct Saved: Encodable {
            var version = 1
            var totalSteps = 0
            var minutes: [[Int64]] = []
            var activities: [HistoryReply.Activity]
        }
        let daemon = try Daemon(executable: executable, stateFiles: ["history.json": try JSONEncoder().encode(Saved(activities: activities))])
        let feeder = Feeder(testbed: testbed, device: "iio:device0", node: "/dev/iio:device0", rate: 100)
        defer { feeder.stop() }
        let watcher = try LoadClients(socket: daemon.socket, count: 1)
        watcher.start()
        try watcher.sendToAll(#"{"class":"WATCH","streams":["motion"],"interval":0.01}"#)
        sleep(2)
        let probe = ProcessProbe(pid: daemon.pid)
        let request = Array(String(format: #"{"class":"HISTORY","stream":"activity","from":%.0f}"#, now - week).utf8) + [10]
        let reply = try LineConnection(socketPath: daemon.socket).roundTrip(String(decoding: request.dropLast(), as: UTF8.self), until: "HISTORY")
        print("history: one reply over the week is \(reply.count) bytes; before: \(probe.footprint)")

        // (1) 40 clients, 250 requests each, nothing read.
        watcher.startCounting()
        let sleepers = try (0..<40).map { _ in try UnixSocket.connect(to: daemon.socket, patience: 10).take() }
        let burst = Array([[UInt8]](repeating: request, count: 250).joined())
        for fd in sleepers {
            // Non-blocking: what the kernel's buffer does not take stays unsent, as a real attacker's would.
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = burst.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        }
        let started = Feeder.now()
        var peak = 0
        var disconnectedAt = [Double?](repeating: nil, count: sleepers.count)
        while Double(Feeder.now() - started) * 1e-9 < 30, disconnectedAt.contains(where: { $0 == nil }) {
            peak = max(peak, probe.status("VmRSS"))
            for (index, fd) in sleepers.enumerated() where disconnectedAt[index] == nil {
                // Sees the end of the connection without reading the replies: a Unix socket whose
                // peer closed is POLLHUP (unix_poll in net/unix/af_unix.c).
                var polled = pollfd(fd: fd, events: 0, revents: 0)
                if poll(&polled, 1, 0) > 0, polled.revents & Int16(POLLHUP | POLLERR) != 0 {
                    disconnectedAt[index] = Double(Feeder.now() - started) * 1e-9
                }
            }
            usleep(100_000)
        }
        for fd in sleepers { close(fd) }
        sleep(2)
        let times = disconnectedAt.compactMap { $0 }
        print(String(
            format: "history: 40 clients × 250 unread requests: RSS peak %d kB, after they left %d kB; disconnected %d of 40, after %.1f–%.1f s",
            peak, probe.status("VmRSS"), times.count, times.min() ?? .nan, times.max() ?? .nan))
        let watched = watcher.latencies.max().map { Double($0) * 1e-6 } ?? .nan
        print(String(format: "history: the watcher meanwhile: %d motion lines, largest latency %.1f ms", watcher.received[0], watched))

        // (2) one client pipelines 250 and reads every reply.
        let reader = try LineConnection(socketPath: daemon.socket)
        let before = watcher.latencies.count
        let pipelined = Feeder.now()
        try reader.send(raw: burst)
        var replies = 0
        while replies < 250 {
            let line = try reader.nextLine(timeout: 10)
            if Wire.className(of: line) == HistoryReply.className { replies += 1 }
        }
        let seconds = Double(Feeder.now() - pipelined) * 1e-9
        let during = watcher.latencies[before...].max().map { Double($0) * 1e-6 } ?? .nan
        watcher.stop()
        print(String(format: "history: one client pipelining 250 and reading: all in %.2f s; the watcher's largest latency meanwhile %.1f ms; after: %@", seconds, during, probe.footprint))
    }
}
