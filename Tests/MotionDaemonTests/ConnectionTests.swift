import Foundation
import HubTestKit
import MotionClient
import MotionCore
import MotionDevices
import MotionWire
import TestSupport
import Testing

@testable import MotionDaemon
import MotionSocketServer

#if canImport(Glibc)
import Glibc
#endif

/// The socket front end's rules for connections (greeting, limits, pipelining, flooding, order,
/// the socket file), on an in-process server whose one device is the kit's scripted IMU: polled on
/// the server's loop, it gives nothing (counts that are no reading, which the device layer drops)
/// until a test sets its counts (`give`), so a POLL waits for its first sample for as long as the
/// test wants. No umockdev: these run beside the `Hardware` suite, their waits on threads of their own.
@Suite(.onOwnThreads) struct ConnectionTests {
    /// The imu-buffered fixture's bmi160 (`Machines.imu`), read polled.
    static var imu: DeviceDescriptor {
        var imu = Machines.imu
        imu.captureMode = .polled
        return imu
    }

    /// A started in-process server on a fresh socket, its one device the scripted IMU, silent.
    static func startServerOnIMU(maximumClients: Int = 1000, metrics: (host: String, port: Int)? = nil) async throws -> (ScriptedSource, MotionServer) {
        let source = ScriptedSource(devices: [imu])
        let silence = Vector3(x: .nan, y: .nan, z: .nan)
        source.counts.withLock { $0[imu.number] = [.accelerometer: silence, .gyroscope: silence] }
        let server = MotionServer(socketPath: temporarySocketPath(), source: source, maximumClients: maximumClients, metrics: metrics)
        try await server.start()
        return (source, server)
    }

    /// The scripted IMU's accelerometer reads lying face up (16384 counts of z, 0.98 g) from its next read on.
    static func give(_ source: ScriptedSource) {
        source.counts.withLock { $0[imu.number]?[.accelerometer] = Vector3(x: 0, y: 0, z: 16384) }
    }

    /// A client that connects and closes before reading its greeting: the greeting's write fails
    /// (EPIPE) inside `channelActive`, and NIO reports the channel inactive before the handler had
    /// stored its id, so the hub kept the client for ever (10,000 cycles: 10,001 clients, all
    /// visited on every sample). Now none is left behind.
    @Test func connectingAndClosingWithoutReadingLeavesNoClientBehind() async throws {
        let (_, server) = try await Self.startServerOnIMU()
        try await server.whileServing {
            for _ in 0..<2000 { _ = try UnixSocket.connect(to: server.socketPath) }  // closed as it goes
            let client = try TestClient.greeted(path: server.socketPath)
            var clients = -1
            try waitUntil {
                try? client.send(#"{"class":"STATUS"}"#)
                clients = (try? client.decode(StatusReply.self, client.next("STATUS")))?.clients ?? -1
                return clients == 1
            }
            #expect(clients == 1)
        }
    }

    /// Connections beyond the limit are told why and closed; the others are not disturbed.
    @Test func aConnectionBeyondTheLimitIsToldWhyAndClosed() async throws {
        let (_, server) = try await Self.startServerOnIMU(maximumClients: 3)
        try await server.whileServing {
            let admitted = try (0..<3).map { _ in try TestClient(path: server.socketPath) }
            for client in admitted { _ = try client.next("VERSION") }
            let refused = try TestClient(path: server.socketPath)
            let error = try refused.decode(ErrorReply.self, try refused.next("ERROR"))
            #expect(error.message == "too many clients (3); try again later")
            #expect(throws: MotionClientError.connectionLost("motiond closed the connection")) { try refused.next(seconds: 2) }
            try admitted[0].send(#"{"class":"STATUS"}"#)
            #expect(try admitted[0].decode(StatusReply.self, try admitted[0].next("STATUS")).clients == 3)
        }
    }

    /// `printf '{"class":"POLL",…}\n' | socat - UNIX-CONNECT:SOCK`: socat shuts down its writing side
    /// at the end of its input and waits for the answer. The poll waits for the sensor's first
    /// sample; the answer must still come, and then the connection closes.
    @Test func aClientThatClosesItsWritingSideStillGetsItsAnswers() async throws {
        let (source, server) = try await Self.startServerOnIMU()
        try await server.whileServing {
            let client = try TestClient.greeted(path: server.socketPath)
            try client.send(#"{"class":"POLL","id":7,"streams":["accelerometer"]}"#)
            shutdown(client.fd, Int32(SHUT_WR))
            try waitUntil { source.running(Self.imu.number) != nil }
            Self.give(source)
            let snapshot = try client.decode(Snapshot.self, try client.next("SNAPSHOT"))
            #expect(snapshot.id == .integer(7) && snapshot.accelerometer != nil)
            #expect(throws: MotionClientError.connectionLost("motiond closed the connection")) { try client.next(seconds: 2) }
        }
    }

    /// `socat` with a file of requests: more than the client's queue holds (its requests then wait),
    /// and its writing side shut at the end, read to the last answer. The end of its input, read
    /// while requests still waited, must not close the connection before they are answered.
    @Test func aClientThatPipelinesMoreThanItsQueueHoldsThenEndsItsInputGetsEveryAnswer() async throws {
        let (_, server) = try await Self.startServerOnIMU()
        try await server.whileServing {
            let client = try TestClient.greeted(path: server.socketPath)
            let count = 2_000
            let requests = (1...count).map { #"{"class":"DEVICES","id":\#($0)}"# + "\n" }.joined()
            _ = requests.utf8CString.withUnsafeBytes { write(client.fd, $0.baseAddress, $0.count - 1) }
            shutdown(client.fd, Int32(SHUT_WR))
            var ids: [Int64] = []
            while let line = try? client.next(seconds: 5) {
                if case .integer(let id)? = try? client.decode(DevicesReply.self, line).id { ids.append(id) }
            }
            #expect(ids == Array(1...Int64(count)), "\(ids.count) of \(count) answered, in order")
        }
    }

    /// Replies are never dropped, so a client that writes thousands of requests and reads nothing
    /// would grow its queue without bound (one 64 KB read of "x\n" asks for 32,768 error replies).
    /// Its requests wait once its queue is full (the rest of the read held, reading paused), and it is
    /// disconnected once it has left its replies unread for the stuck timeout; nobody else notices.
    @Test func aClientThatFloodsRequestsWithoutReadingIsDisconnected() async throws {
        let (_, server) = try await Self.startServerOnIMU()
        try await server.whileServing {
            let flooder = try TestClient(path: server.socketPath)
            let flood = [UInt8](repeating: 0, count: 65_536).enumerated().map { $0.offset % 2 == 0 ? UInt8(ascii: "x") : UInt8(ascii: "\n") }
            _ = flood.withUnsafeBytes { write(flooder.fd, $0.baseAddress, $0.count) }
            let other = try TestClient.greeted(path: server.socketPath)
            try waitUntil(seconds: 10 + 10) {
                try? other.send(#"{"class":"STATUS"}"#)
                return (try? other.decode(StatusReply.self, other.next("STATUS")))?.clients == 1
            }
            // What the flooder finds when it reads at last: the replies its queue and the socket's
            // buffers held (3,073 lines here: the kernel's buffer takes most), then the end.
            var lines = 0
            while (try? flooder.next(seconds: 2)) != nil { lines += 1 }
            #expect(lines < 4_096, "\(lines) lines before the connection closed")
        }
    }

    /// `--socket PATH` used to delete whatever was at PATH, a regular file too, and a second daemon
    /// unlinked a live one's socket, leaving it unreachable. Only a socket nobody answers on (left by
    /// a run that did not stop cleanly) is replaced; anything else is refused with the reason.
    @Test func theSocketPathIsTakenOnlyFromADaemonThatIsGone() async throws {
        let file = temporarySocketPath()
        try "precious".write(toFile: file, atomically: true, encoding: .utf8)
        defer { unlink(file) }
        await #expect(throws: SocketServer.AccessError.self) { try await MotionServer(socketPath: file, source: ScriptedSource(devices: [Self.imu])).start() }
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "precious")

        let (_, first) = try await Self.startServerOnIMU()
        let second = MotionServer(socketPath: first.socketPath, source: ScriptedSource(devices: [Self.imu]))
        await #expect(throws: SocketServer.AccessError.self) { try await second.start() }
        try await second.stop()
        _ = try TestClient.greeted(path: first.socketPath)  // the first still answers

        // A socket file whose daemon is gone (bound, never listened on, closed) is replaced.
        let stale = temporarySocketPath()
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, byte) in stale.utf8.enumerated() { raw[i] = byte } }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        close(fd)
        let third = MotionServer(socketPath: stale, source: ScriptedSource(devices: [Self.imu]))
        try await third.start()
        _ = try TestClient(path: stale).next("VERSION")
        try await third.stop()
        try await first.stop()
    }

    /// protocol.md: "Replies come in the order of the requests". A POLL that waits for its sensor's
    /// first sample used to be answered after the STATUS and DEVICES sent behind it.
    @Test func repliesComeInTheOrderOfTheRequestsEvenBehindAWaitingPoll() async throws {
        let (source, server) = try await Self.startServerOnIMU(metrics: (host: "127.0.0.1", port: 0))
        try await server.whileServing {
            let client = try TestClient.greeted(path: server.socketPath)
            try client.send(#"{"class":"POLL","id":1,"streams":["accelerometer"]}"#)
            try client.send(#"{"class":"STATUS","id":2}"#)
            try client.send(#"{"class":"DEVICES","id":3}"#)
            try client.send("not json")
            try waitUntil { source.running(Self.imu.number) != nil }
            // The last request has been handled (refused, and counted) before the sensor gives its sample.
            let metrics = try #require(server.metricsPort)
            try waitUntil {
                let page = (try? httpRequest(port: metrics, path: "/metrics").body) ?? ""
                return prometheusSamples(page)["motiond_errors_total{kind=\"request_refused\"}"] == 1
            }
            Self.give(source)
            let replies = try (0..<4).map { _ in try AnyServerMessage(line: Array(try client.next().utf8)).message.map { type(of: $0).className } }
            #expect(replies == ["SNAPSHOT", "STATUS", "DEVICES", "ERROR"], "\(replies)")
        }
    }

    /// Pipelined POLLs against a sensor that gives nothing: each used to replan over every waiting
    /// poll (20,000 cost 18 s of CPU and stalled other clients for 4.8 s). A client may have 32
    /// waiting; beyond, a POLL is refused at once. Every request still gets its reply, in order,
    /// and other clients are served meanwhile.
    @Test func pipelinedPollsOnASilentSensorAreCappedAndAnsweredInOrder() async throws {
        let (_, server) = try await Self.startServerOnIMU()
        try await server.whileServing {
            let poller = try TestClient.greeted(path: server.socketPath)
            let count = 500
            let requests = (1...count).map { #"{"class":"POLL","id":\#($0),"streams":["gyroscope"]}"# }.joined(separator: "\n") + "\n"
            _ = requests.utf8CString.withUnsafeBytes { write(poller.fd, $0.baseAddress, $0.count - 1) }
            let other = try TestClient.greeted(path: server.socketPath)
            let asked = Date()
            try other.send(#"{"class":"STATUS"}"#)
            _ = try other.next("STATUS")
            #expect(Date().timeIntervalSince(asked) < 0.5, "another client waited \(Date().timeIntervalSince(asked)) s")
            // The 32 that wait end with the sensor's first sample or their timeout, whichever comes first.
            var ids: [RequestID?] = []
            var refused = 0
            for _ in 0..<count {
                let line = try poller.next(seconds: 5)
                if Wire.className(of: Array(line.utf8)) == "SNAPSHOT" {
                    ids.append(try poller.decode(Snapshot.self, line).id)
                } else {
                    let error = try poller.decode(ErrorReply.self, line)
                    ids.append(error.id)
                    if error.message == "32 polls are waiting already; wait for their answers" { refused += 1 }
                }
            }
            #expect(ids == (1...count).map { RequestID.integer(Int64($0)) }, "every reply, in the order of the requests")
            #expect(refused == count - 32)
        }
    }

    /// 3000 STATUS requests in one write from each of three clients: writing a reply while the read
    /// was still being framed could make NIO read the socket again and re-enter the handler in the
    /// middle of it (a fatal exclusive-access conflict: the daemon died). Replies now go out once the
    /// read is framed, and the daemon keeps serving.
    @Test func aClientWritingThousandsOfRequestsAtOnceCannotCrashTheDaemon() async throws {
        let (_, server) = try await Self.startServerOnIMU()
        try await server.whileServing {
            // One writes and reads along, one writes and never reads, one writes and goes away.
            let requests = String(repeating: #"{"class":"STATUS"}"# + "\n", count: 3000)
            let reader = try TestClient(path: server.socketPath)
            let sleeper = try TestClient(path: server.socketPath)
            let leaver = try UnixSocket.connect(to: server.socketPath)
            var greeting = [UInt8](repeating: 0, count: 4096)
            _ = read(leaver.rawValue, &greeting, greeting.count)  // greeted, so the daemon reads what it sends next
            for fd in [reader.fd, sleeper.fd, leaver.rawValue] {
                _ = requests.utf8CString.withUnsafeBytes { write(fd, $0.baseAddress, $0.count - 1) }
            }
            _ = consume leaver  // closed: it goes
            // Its 3000 replies, or as many as came before the daemon closed it for flooding (a read of
            // more than `ClientOutbox.floodLimit` requests can queue that many replies at once): never
            // a silence. 5 s, not 2: in the whole suite, on 2 cores, a loaded daemon was once silent 2 s.
            var read = 0
            var closed = false
            while read < 3000 && !closed {
                do {
                    _ = try reader.next(seconds: 5)
                    read += 1
                } catch MotionClientError.connectionLost {
                    closed = true
                }
            }
            #expect(read == 3000 || closed, "\(read) replies, then silence")
            let other = try TestClient.greeted(path: server.socketPath)
            try other.send(#"{"class":"STATUS"}"#)
            _ = try other.decode(StatusReply.self, try other.next("STATUS"))
        }
    }
}
