import Foundation
import TestSupport
import Testing

/// The metrics port attacked as any local user can (issue 25, defects 3 and 4).
@Suite(.serialized, .onOwnThreads) struct MetricsAttackTests {
    static func daemon() throws -> (ReplayDaemon, port: Int) {
        let port = try freeLoopbackPort()
        let daemon = try ReplayDaemon(arguments: ["--loop", "--metrics", "127.0.0.1:\(port)"])
        try waitUntil { MosquittoBroker.accepts(port: port) }  // the metrics start after the socket
        return (daemon, port)
    }

    /// Defect 3: every pipelined request was answered whether or not the client read, so one
    /// connection that sent 13.6 MB of requests and read nothing grew the daemon by a gigabyte.
    @Test func pipelinedRequestsThatAreNeverReadHoldOneResponseNotOnePerRequest() throws {
        let (daemon, port) = try Self.daemon()
        _ = try httpRequest(port: port, path: "/metrics")
        let before = daemon.process.residentMegabytes
        let fd = try connectLoopback(port: port)
        defer { close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        let requests = Array(String(repeating: "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", count: 1000).utf8)
        var sent = 0
        var closedByDaemon = false
        let deadline = Date().addingTimeInterval(20)  // under a full run the daemon reads it slowly: 8 s was too short once
        while Date() < deadline && sent < 13_600_000 {
            let written = requests.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written > 0 {
                sent += written
            } else if errno == EAGAIN {
                usleep(10_000)
            } else {
                closedByDaemon = true
                break
            }
        }
        let grown = daemon.process.residentMegabytes - before
        #expect(grown < 30, "RSS grew \(grown) MB while \(sent) bytes of requests went unread")
        #expect(closedByDaemon, "a connection that pipelines far more than it reads is closed")
        print("pipelined unread requests: \(sent) bytes sent, RSS +\(grown) MB, closed by the daemon: \(closedByDaemon)")
        #expect(try httpRequest(port: port, path: "/metrics").status == 200)
    }

    /// Defect 4: connections were unlimited and never timed out, so idle ones held descriptors for ever.
    @Test func connectionsAreCappedAndOnesThatSayNothingAreClosed() throws {
        let (daemon, port) = try Self.daemon()
        let idle = try (0..<16).map { _ in try connectLoopback(port: port) }
        defer { for fd in idle { close(fd) } }
        usleep(200_000)  // stays: the daemon admitting the 16 (and closing the probe's) shows nowhere outside it
        let refused = try httpRequest(port: port, path: "/metrics")
        #expect(refused.status == 503 && refused.body == "too many connections (16); try again later\n", "\(refused)")

        // A request that never ends is closed after the request timeout (once the cap has room: the
        // idle ones are closed by the same timeout).
        let idleClosed = secondsUntilClosed(idle[0], within: 10)
        #expect(idleClosed != nil, "an idle connection is closed")
        let halfSent = try connectLoopback(port: port)
        defer { close(halfSent) }
        _ = write(halfSent, "GET /metr", 9)
        let closedAfter = secondsUntilClosed(halfSent, within: 10)
        #expect(closedAfter.map { $0 < 8 } == true, "closed after \(closedAfter.map { "\($0) s" } ?? "more than 10 s")")
        print("metrics: the 17th connection got \(refused.status); idle ones were closed after \(idleClosed ?? .infinity) s, a half-sent request after \(closedAfter ?? .infinity) s")

        // The idle ones were closed too: scrapes are served again, and local clients all along.
        #expect(try httpRequest(port: port, path: "/metrics").status == 200)
        _ = try TestClient.greeted(path: daemon.socket)
    }
}

/// The seconds until the daemon closes `fd` (its end of the stream, or a reset), reading what comes
/// meanwhile; nil if it is still open after `within`.
private func secondsUntilClosed(_ fd: Int32, within seconds: Double) -> Double? {
    let started = Date()
    var buffer = [UInt8](repeating: 0, count: 4096)
    while Date().timeIntervalSince(started) < seconds {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 100) > 0 else { continue }
        if read(fd, &buffer, buffer.count) <= 0 { return Date().timeIntervalSince(started) }
    }
    return nil
}
