import Foundation
import Testing
import TestSupport

/// The DSU server under the attacks of issue 40, each on a real `motiond --replay … --dsu`: what one
/// datagram, one local user or one address can do to it, and what it says.
@Suite(.serialized) struct DSUAttackTests {
    /// A daemon with a DSU socket and metrics, on ports of their own; `settings`: more of the `dsu`
    /// section. `arguments`: more flags.
    struct Daemon {
        let daemon: ReplayDaemon
        let port: Int
        let metrics: Int

        init(settings: String = "", arguments: [String] = []) throws {
            port = try freeLoopbackPort(datagram: true)
            metrics = try freeLoopbackPort()
            let config = NSTemporaryDirectory() + "dsu-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).conf"
            try "dsu:\n  listen: 127.0.0.1:\(port)\n\(settings)metrics: 127.0.0.1:\(metrics)\n".write(toFile: config, atomically: true, encoding: .utf8)
            daemon = try ReplayDaemon(arguments: ["--loop", "--config", config] + arguments)
            try DSUServerTests.waitForServer(port: port)
        }

        /// The metrics page's value of `name` (with its labels), nil when it is not there.
        func metric(_ name: String) throws -> Int? {
            let page = try httpRequest(port: metrics, path: "/metrics").body
            return page.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ").last!) }
        }

        /// SIGTERM; whether the daemon then exited with status 0.
        func stopsCleanly() -> Bool {
            guard daemon.stop() else { return false }
            daemon.process.waitUntilExit()
            return daemon.process.terminationReason == .exit && daemon.process.terminationStatus == 0
        }
    }

    /// For `seconds`, the largest gap between `watcher`'s MOTION lines, and the DSU packets sent a
    /// second over the last 2.5 s (the metrics).
    static func measure(_ watcher: TestClient, _ daemon: Daemon, seconds: Double) throws -> (largestGap: Double, packetsPerSecond: Double) {
        var largestGap = 0.0
        var last = Date()
        let end = last.addingTimeInterval(seconds)
        var sentAt: (Date, Int)?
        while Date() < end {
            _ = try watcher.next("MOTION")
            let now = Date()
            largestGap = max(largestGap, now.timeIntervalSince(last))
            last = now
            if sentAt == nil, now > end.addingTimeInterval(-2.5) {
                sentAt = (now, try daemon.metric("motiond_dsu_packets_sent_total") ?? 0)
            }
        }
        guard let (then, sent) = sentAt else { return (largestGap, 0) }
        let now = try daemon.metric("motiond_dsu_packets_sent_total") ?? 0
        return (largestGap, Double(now - sent) / Date().timeIntervalSince(then))
    }

    /// A watcher of `daemon`'s MOTION at 1 ms, its first line read.
    static func watcher(_ daemon: Daemon) throws -> TestClient {
        let watcher = try TestClient.greeted(path: daemon.daemon.socket)
        try watcher.send(#"{"class":"WATCH","streams":["motion"],"interval":0.001}"#)
        _ = try watcher.next("WATCHING")
        _ = try watcher.next("MOTION")
        return watcher
    }

    /// `clients` asking for pad data every second on a thread of their own, until `body` returns.
    static func whileAsking<T>(_ clients: [DSUTestClient], _ body: () throws -> T) rethrows -> T {
        let asking = Locked(true)
        let asker = Thread.detachedGroup(1) { _ in
            while asking.withLock({ $0 }) {
                for client in clients { try? client.requestPadData(.slot(0)) }
                Thread.sleep(forTimeInterval: 1)
            }
        }
        defer {
            asking.withLock { $0 = false }
            asker.wait()
        }
        return try body()
    }

    /// Pad-data packets `client` receives within `seconds`.
    static func padPackets(_ client: DSUTestClient, for seconds: Double) -> Int {
        client.receiveAll(for: seconds).count { if case .padData = $0 { true } else { false } }
    }

    /// Defect 1: a reply to UDP port 0 fails (EINVAL), and NIO's datagram channel closed itself on
    /// it: every client lost, and the stop exited 1 ("Already closed"). Requests from port 0 are
    /// dropped and counted; the server serves on and stops cleanly.
    @Test func aDatagramFromPortZeroLeavesTheServerServingAndTheStopClean() async throws {
        struct Outcome: Sendable {
            var packets = 0
            var dropped: Int?
            var clean = false
            var log = ""
        }
        let outcome = try await onOwnThread { () throws -> Outcome in
            let daemon = try Daemon()
            let forger = try DSUTestClient(serverPort: daemon.port)
            try DSUTestClient.sendFromPortZero(forger.packet(type: 0x10_0000, body: []), serverPort: daemon.port)
            try DSUTestClient.sendFromPortZero(forger.packet(type: 0x10_0002, body: [0, 0, 0, 0, 0, 0, 0, 0]), serverPort: daemon.port)
            // After the forged ones, in the same socket's queue: a client as emulators ask.
            let client = try DSUTestClient(serverPort: daemon.port)
            try client.requestPadData(.slot(0))
            var outcome = Outcome()
            outcome.packets = Self.padPackets(client, for: 1.5)
            outcome.dropped = try daemon.metric(#"motiond_dsu_datagrams_dropped_total{reason="source_port_zero"}"#)
            outcome.clean = daemon.stopsCleanly()
            outcome.log = daemon.daemon.log
            return outcome
        }
        // 285.7 Hz for 1.5 s: 428 packets.
        #expect(outcome.packets > 300, "a client after a datagram from port 0 got \(outcome.packets) packets in 1.5 s")
        #expect(outcome.dropped == 2, "source_port_zero: \(outcome.dropped.map(String.init) ?? "not counted")")
        #expect(outcome.clean, "SIGTERM after a datagram from port 0 did not exit 0: \(outcome.log)")
    }

    /// Defect 2: one user's 1,024 sockets asking for pad data each second (the issue's attack) at the
    /// 1 kHz motiond asks of an IMU for DSU. They held 1,024 leases (270,000 packets a second, a full
    /// core) and a socket client's MOTION stream stalled for seconds. Now that user holds
    /// `maximum_clients_per_source` (4) and the stream keeps its pace.
    @Test func oneUsersThousandSocketsHoldItsShareAndTheSocketStreamKeepsItsPace() async throws {
        struct Outcome: Sendable {
            var served = 0
            var largestGap = 0.0
            var packetsPerSecond = 0.0
        }
        // As in `theMostClientsAtOneKilohertzLeaveTheSocketStreamOnPace`, the pace is judged where the
        // machine let the replay keep its own (80 % of the 4 leases' packets or more): in the full
        // suite on two cores the replay fell to 79 % (3,161 packets/s), and the stream with it
        // (837 ms), which says nothing of DSU. The attack is not let through: its 1,024 leases sent
        // far more, which needs no retry and fails below. Up to three tries, each with a daemon of its own.
        var tries: [Outcome] = []
        repeat {
            tries.append(try await onOwnThread { () throws -> Outcome in
                var limit = rlimit()
                getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
                limit.rlim_cur = limit.rlim_max
                setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
                // The recording's 285.7 Hz × 3.5: 1 kHz.
                let daemon = try Daemon(arguments: ["--speed", "3.5"])
                let watcher = try Self.watcher(daemon)
                // Under `environmentLock`, as `launchableDescriptors` says: a launch beside them waits.
                let clients = try environmentLock.withLock { try (0..<1024).map { _ in try DSUTestClient(serverPort: daemon.port) } }
                var outcome = Outcome()
                (outcome.largestGap, outcome.packetsPerSecond) = try Self.whileAsking(clients) { try Self.measure(watcher, daemon, seconds: 4) }
                outcome.served = clients.count { !$0.receiveQueued().isEmpty }
                return outcome
            })
        } while tries.last!.packetsPerSecond < 4 * 1000 * 0.8 && tries.count < 3
        let outcome = tries.last!
        print("DSU 1,024 sockets of one user at 1 kHz: \(outcome.served) served, \(Int(outcome.packetsPerSecond)) packets/s, the socket's largest MOTION gap \(Int(outcome.largestGap * 1000)) ms (try \(tries.count))")
        #expect(outcome.served == 4, "\(outcome.served) of one user's 1,024 sockets were served")
        // At most one packet per lease per sample, and the replay kept its pace.
        #expect(
            outcome.packetsPerSecond > 4 * 1000 * 0.8 && outcome.packetsPerSecond < 4 * 1000 * 1.25,
            "\(outcome.packetsPerSecond) packets/s in every one of \(tries.count) tries: \(tries.map { ($0.packetsPerSecond, $0.largestGap) })")
        // The attack stalled it 2.4–3.0 s. A debug build on two shared cores measured 46–160 ms here.
        #expect(outcome.largestGap < 0.5, "the socket's MOTION stream stalled \(outcome.largestGap) s")
    }

    /// The most clients the defaults let in (16, here all root's, so the share per source raised to
    /// match) at 1 kHz, each asking every second: every one served, and a socket client's MOTION
    /// stream keeps its pace beside them.
    @Test func theMostClientsAtOneKilohertzLeaveTheSocketStreamOnPace() async throws {
        // The pace is judged where the machine let the replay keep its own (80 % of its packets or
        // more): the full suite's other tests on two cores once slowed it to 67 %, and the stream with
        // it (804 ms), which says nothing of DSU. Up to three tries, each with a daemon of its own.
        var tries: [(served: Int, gap: Double, rate: Double)] = []
        repeat {
            tries.append(try await onOwnThread { () throws -> (served: Int, gap: Double, rate: Double) in
                let daemon = try Daemon(settings: "  maximum_clients_per_source: 16\n", arguments: ["--speed", "3.5"])
                let watcher = try Self.watcher(daemon)
                let clients = try (0..<16).map { _ in try DSUTestClient(serverPort: daemon.port) }
                let (gap, rate) = try Self.whileAsking(clients) { try Self.measure(watcher, daemon, seconds: 4) }
                return (clients.count { !$0.receiveQueued().isEmpty }, gap, rate)
            })
        } while tries.last!.rate < 16 * 1000 * 0.8 && tries.count < 3
        let (served, gap, rate) = tries.last!
        print("DSU 16 clients at 1 kHz: \(served) served, \(Int(rate)) packets/s, the socket's largest MOTION gap \(Int(gap * 1000)) ms (try \(tries.count))")
        #expect(served == 16)
        // At most one packet per client per sample, and the replay kept its pace.
        #expect(rate > 16 * 1000 * 0.8 && rate < 16 * 1000 * 1.25, "\(rate) packets/s in every one of \(tries.count) tries: \(tries)")
        #expect(gap < 0.5, "the socket's MOTION stream stalled \(gap) s")
    }

    /// Defect 11: an address beyond loopback is an amplifier and hands the machine's motion to whoever
    /// reaches it (security.md): the start warns, naming the address; loopback does not.
    @Test func aDSUAddressBeyondLoopbackIsWarnedOfAtStart() async throws {
        let (wide, loopback) = try await onOwnThread { () throws -> (String, String) in
            let port = try freeLoopbackPort(datagram: true)
            let wide = try ReplayDaemon(arguments: ["--loop", "--dsu", "0.0.0.0:\(port)"])
            try DSUServerTests.waitForServer(port: port)
            wide.stop()
            let narrow = try Daemon()
            narrow.daemon.stop()
            return (wide.log, narrow.daemon.log)
        }
        let warning = "DSU listens beyond loopback"
        let line = wide.split(separator: "\n").first { $0.contains(warning) } ?? ""
        #expect(line.contains("0.0.0.0") && line.contains("amplifier"), "no warning naming the address and the risk: \(wide)")
        #expect(!loopback.contains(warning), "\(loopback)")
    }

    /// Defect 4: on loopback every local user got the IMU over UDP, bypassing the Unix socket's
    /// group. A socket of a user who may not connect to motiond's socket (here `nobody`, with the
    /// socket `root:daemon 0660`) is refused and counted; the group's member (`daemon`) and root are
    /// served.
    @Test func onLoopbackOnlyUsersWhoMayUseMotiondsSocketGetPadData() async throws {
        struct Outcome: Sendable {
            var nobody = 0
            var member = 0
            var root = 0
            var refused: Int?
        }
        let nobody = getpwnam("nobody").pointee.pw_uid
        let member = getpwnam("daemon").pointee.pw_uid
        let outcome = try await onOwnThread { () throws -> Outcome in
            let daemon = try Daemon(arguments: ["--socket-group", "daemon"])
            let clients = try [nobody, member, 0].map { try DSUTestClient(serverPort: daemon.port, owner: $0) }
            for client in clients { try client.requestPadData(.slot(0)) }
            // In the order they asked: once root's packets flow, the others' fate is decided.
            let root = Self.padPackets(clients[2], for: 1)
            return Outcome(
                nobody: clients[0].receiveQueued().count, member: clients[1].receiveQueued().count, root: root,
                refused: try daemon.metric(#"motiond_dsu_datagrams_dropped_total{reason="not_permitted"}"#))
        }
        #expect(outcome.nobody == 0, "nobody's socket got \(outcome.nobody) packets")
        #expect(outcome.member > 100 && outcome.root > 100, "the group's member got \(outcome.member), root \(outcome.root)")
        #expect(outcome.refused == 1, "not_permitted: \(outcome.refused.map(String.init) ?? "not counted")")
    }
}
