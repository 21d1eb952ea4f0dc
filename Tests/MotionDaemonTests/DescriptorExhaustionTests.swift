import Foundation
import MotionClient
import MotionWire
import TestSupport
import Testing

/// The daemon out of file descriptors (issue 25, defect 8). `prlimit` lowers a running daemon's limit
/// below what it holds open, so that every `accept` fails with EMFILE, as under a flood of
/// connections: NIO's accept loop used to spin on it (100 % of a core) while the clients waiting in
/// the kernel heard nothing.
@Suite(.serialized, .onOwnThreads) struct DescriptorExhaustionTests {
    static func setDescriptorLimit(of pid: Int32, to limit: Int) throws {
        let prlimit = Process()
        prlimit.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
        prlimit.arguments = ["--pid", "\(pid)", "--nofile=\(limit):"]  // the soft limit only: raising it again needs no privilege
        try prlimit.runWithSteadyEnvironment()
        prlimit.waitUntilExit()
        guard prlimit.terminationStatus == 0 else { throw TestClientError("prlimit failed: \(prlimit.terminationStatus)") }
    }

    @Test func outOfDescriptorsNewClientsAreToldWhyAndTheLoopDoesNotSpin() throws {
        let metrics = try freeLoopbackPort()
        let daemon = try ReplayDaemon(arguments: ["--loop", "--metrics", "127.0.0.1:\(metrics)"])
        try waitUntil { MosquittoBroker.accepts(port: metrics) }
        let held = try (0..<150).map { _ in try UnixSocket.connect(to: daemon.socket).take() }
        let status = try TestClient.greeted(path: daemon.socket)
        try waitUntil(seconds: 10) {
            try? status.send(#"{"class":"STATUS"}"#)
            return ((try? status.decode(StatusReply.self, status.next("STATUS")))?.clients ?? 0) >= 151
        }
        try Self.setDescriptorLimit(of: daemon.process.processIdentifier, to: 64)

        var refusals: [String] = []
        var waiting: [TestClient] = []
        for _ in 0..<20 {
            let client = try TestClient(path: daemon.socket)
            refusals.append((try? client.decode(ErrorReply.self, client.next("ERROR", seconds: 3)).message) ?? "nothing")
            waiting.append(client)
        }
        #expect(refusals.allSatisfy { $0 == "motiond is out of file descriptors; try again later" }, "\(refusals)")
        // The metrics port is guarded alike.
        let scrape = try httpRequest(port: metrics, path: "/metrics")
        #expect(scrape.status == 503 && scrape.body == "motiond is out of file descriptors; try again later\n", "\(scrape)")
        let busy = daemon.process.cpuPercent(over: 2)
        #expect(busy < 20, "the daemon used \(busy) % of a core with no request in flight")
        print("out of descriptors: \(refusals.filter { $0.hasPrefix("motiond is out") }.count) of 20 clients refused with ERROR; CPU \(busy) %")

        // Descriptors come back: the next client is served.
        for fd in held { close(fd) }
        waiting.removeAll()
        try Self.setDescriptorLimit(of: daemon.process.processIdentifier, to: 1024)
        var greeted = false
        try waitUntil(seconds: 5) {
            greeted = (try? TestClient.greeted(path: daemon.socket)) != nil
            return greeted
        }
        #expect(greeted)
        #expect(daemon.log.contains("out of file descriptors: refusing new connections until some close"), "\(daemon.log)")
    }
}
