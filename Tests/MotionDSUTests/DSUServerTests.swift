import Foundation
import MotionCore
import MotionWire
import Testing
import TestSupport

/// motiond's DSU server as emulators meet it: `motiond --replay <the bundled recording> --loop --dsu`,
/// held to the specification's test client (`DSUTestClient`), and compared with the socket's MOTION.
@Suite(.serialized) struct DSUServerTests {
    // Serialized: each runs a daemon that sends thousands of packets a second, and two at once take
    // both cores from the suites beside them. Their waits run `onOwnThread`, off the cooperative pool.
    /// How each emulator asks (docs/games.md): by slot every 1 s (Dolphin), by slot every 3 s (Citra),
    /// for every pad every 3 s (yuzu), by MAC after every packet it gets (Cemu).
    enum Habit: CaseIterable {
        case dolphin, citra, yuzu, cemu

        var subscription: DSUTestClient.Subscription {
            switch self {
            case .dolphin, .citra: .slot(0)
            case .yuzu: .allPads
            case .cemu: .mac([0x02, 0x6D, 0x6F, 0x74, 0x00, 0x00])
            }
        }

        /// Seconds between requests; nil: after every packet.
        var interval: Double? {
            switch self {
            case .dolphin: 1
            case .citra, .yuzu: 3
            case .cemu: nil
            }
        }
    }

    struct Run {
        var ports: [DSUTestClient.PortInformation] = []
        var pads: [DSUTestClient.PadData] = []
        var violations: [String] = []
    }

    /// Waits until the DSU server at `port` answers a version request (the socket listens first).
    static func waitForServer(port: Int) throws {
        let client = try DSUTestClient(serverPort: port)
        // Up to 30 s: the DSU part starts after the socket, and at the full suite's start on two cores
        // it took longer than the 5 s this waited before (only a hang is bounded here).
        for _ in 0..<300 {
            try client.requestVersion()
            if case .version(let version)? = client.receive(within: 0.1) {
                #expect(version == 1001)
                return
            }
        }
        throw TestClientError("the DSU server at 127.0.0.1:\(port) never answered")
    }

    /// One emulator for `seconds`: asks for the four slots' information, then for pad data by its habit.
    static func emulate(_ habit: Habit, port: Int, seconds: Double) throws -> Run {
        let client = try DSUTestClient(serverPort: port)
        var run = Run()
        try client.requestPortInformation(slots: [0, 1, 2, 3])
        while run.ports.count < 4, case .portInformation(let info)? = client.receive(within: 1) { run.ports.append(info) }
        let end = DSUTestClient.now() + Int64(seconds * 1e9)
        try client.requestPadData(habit.subscription)
        var lastRequest = DSUTestClient.now()
        while DSUTestClient.now() < end {
            let packet = client.receive(within: 0.05)
            if case .padData(let data)? = packet { run.pads.append(data) }
            let due = habit.interval.map { Double(DSUTestClient.now() - lastRequest) / 1e9 >= $0 } ?? (packet != nil)
            if due {
                try client.requestPadData(habit.subscription)
                lastRequest = DSUTestClient.now()
            }
        }
        run.violations = client.violations
        return run
    }

    /// One run of the four emulators against a replaying daemon for `seconds`: the socket's MOTION and
    /// ACCELEROMETER samples by timestamp (µs), each emulator's run, and the emulators' failures.
    private static func fourEmulators(seconds: Double) async throws -> ([UInt64: MotionMessage], [UInt64: Vector3], [Run], [String]) {
        try await onOwnThread {
            () throws -> ([UInt64: MotionMessage], [UInt64: Vector3], [Run], [String]) in
            let port = try freeLoopbackPort(datagram: true)
            let daemon = try ReplayDaemon(arguments: ["--loop", "--dsu", "127.0.0.1:\(port)"])
            try Self.waitForServer(port: port)
            let reference = try TestClient.greeted(path: daemon.socket)
            try reference.send(#"{"class":"WATCH","streams":["motion","accelerometer"],"interval":0.001}"#)
            _ = try reference.next("WATCHING")
            let runs = Locked([Run](repeating: Run(), count: Habit.allCases.count))
            let failures = Locked([String]())
            let emulators = Thread.detachedGroup(Habit.allCases.count) { index in
                do {
                    let run = try Self.emulate(Habit.allCases[index], port: port, seconds: seconds)
                    runs.withLock { $0[index] = run }
                } catch { failures.withLock { $0.append("\(Habit.allCases[index]): \(error)") } }
            }
            var motion: [UInt64: MotionMessage] = [:]
            var acceleration: [UInt64: Vector3] = [:]
            let end = Date().addingTimeInterval(seconds + 0.5)
            while Date() < end {
                switch try AnyServerMessage(line: Array(try reference.next().utf8)) {
                case .motion(let m): motion[UInt64(m.timestamp / 1000)] = m
                case .accelerometer(let m): acceleration[UInt64(m.timestamp / 1000)] = m.acceleration
                default: break
                }
            }
            emulators.wait()
            return (motion, acceleration, runs.withLock { $0 }, failures.withLock { $0 })
        }
    }

    /// The issue's acceptance: four clients at once get the IMU's every sample, with exact sizes and
    /// valid CRCs (the test client's checks), increasing numbers and timestamps, and the socket's
    /// values on the DSU axes: the ACCELEROMETER stream's acceleration a as (a.x, a.z, −a.y) g, and
    /// the MOTION stream's rotation rate ω (its bias removed) as (ω.x, −ω.z, ω.y) °/s.
    @Test func fourEmulatorsAtOnceGetEverySampleWithTheMotionStreamsValues() async throws {
        let seconds = 4.0
        let rate = 1e9 / 3_500_000  // the recording's 285.7 Hz
        // As `DSUAttackTests` does, the pace is judged on a try where the machine let the replay keep its
        // own: the socket's MOTION stream at 90 % of the recording's rate or more. In a CI run of the
        // full suite on two cores the replay itself fell to 55 % (547 packets where 900 were due), which
        // says nothing of DSU. Every sample of the span must still reach every emulator. Up to three
        // tries, each with a daemon of its own.
        var tries = 0
        var attempt: ([UInt64: MotionMessage], [UInt64: Vector3], [Run], [String])
        repeat {
            tries += 1
            attempt = try await Self.fourEmulators(seconds: seconds)
        } while Double(attempt.0.count) < 0.9 * rate * (seconds - 0.5) && tries < 3
        let (motion, acceleration, results, failed) = attempt
        #expect(failed.isEmpty, "\(failed)")

        for (habit, run) in zip(Habit.allCases, results) {
            #expect(run.violations.isEmpty, "\(habit): \(run.violations.prefix(5))")
            #expect(run.ports.map(\.slot) == [0, 1, 2, 3], "\(habit)")
            #expect(run.ports.first == .init(slot: 0, state: 2, model: 2, connection: 1, mac: [0x02, 0x6D, 0x6F, 0x74, 0, 0]), "\(habit)")
            #expect(run.ports.dropFirst().allSatisfy { $0.state == 0 }, "\(habit): slots 1–3 are not connected")
            guard let first = run.pads.first, let last = run.pads.last else {
                Issue.record("\(habit) got no pad data")
                continue
            }
            #expect(Double(run.pads.count) > 0.9 * rate * (seconds - 0.5), "\(habit): \(run.pads.count) packets in \(seconds) s")
            // Every sample: the numbers run without a gap, and every MOTION of the span is there.
            #expect(Int(last.packetNumber - first.packetNumber) + 1 == run.pads.count, "\(habit): a packet missing")
            let received = Set(run.pads.map(\.timestamp))
            let missing = motion.keys.filter { (first.timestamp...last.timestamp).contains($0) && !received.contains($0) }
            #expect(missing.isEmpty, "\(habit): \(missing.count) samples of the MOTION stream not received")
            var compared = 0
            for pad in run.pads {
                guard let m = motion[pad.timestamp], let a = acceleration[pad.timestamp] else { continue }
                compared += 1
                let ω = m.rotationRate * (180 / .pi)
                let expected: [Double] = [a.x, a.z, -a.y, ω.x, -ω.z, ω.y]
                let got = [pad.acceleration.x, pad.acceleration.y, pad.acceleration.z, pad.pitch, pad.yaw, pad.roll].map(Double.init)
                let agrees = zip(expected, got).allSatisfy { abs($0 - $1) <= 1e-5 * max(1, abs($0)) }
                if !agrees {
                    Issue.record("\(habit) at \(pad.timestamp) µs: \(got), ACCELEROMETER and MOTION say \(expected)")
                    break
                }
            }
            #expect(compared > run.pads.count * 9 / 10, "\(habit): \(compared) of \(run.pads.count) matched a MOTION")
        }
    }

    /// A lease lasts 5 s after the last request: under 3 s breaks Citra and yuzu.
    @Test func padDataStopsFiveSecondsAfterTheLastRequest() async throws {
        let (lasted, violations) = try await onOwnThread { () throws -> (Double, [String]) in
            let port = try freeLoopbackPort(datagram: true)
            let daemon = try ReplayDaemon(arguments: ["--loop", "--dsu", "127.0.0.1:\(port)"])
            try Self.waitForServer(port: port)
            let client = try DSUTestClient(serverPort: port)
            let asked = DSUTestClient.now()
            try client.requestPadData(.slot(0))
            var lastArrival = asked
            // A pause of 2 s ends the flow: a loaded machine's stall of a second is not the lease's end.
            while case .padData(let data)? = client.receive(within: 2) { lastArrival = data.received }
            daemon.stop()
            return (Double(lastArrival - asked) / 1e9, client.violations)
        }
        #expect(lasted > 4.8 && lasted < 5.3, "pad data flowed \(lasted) s after one request")
        #expect(violations.isEmpty, "\(violations.prefix(5))")
    }

    /// Hostile datagrams are dropped unanswered and counted by reason; a good client is served
    /// throughout, and clients beyond the limit are refused, logged once.
    @Test func hostileDatagramsAreDroppedAndCountedAndClientsAreBounded() async throws {
        struct Outcome: Sendable {
            var reasons: [String] = []
            var sent = 0
            var answeredHostile = false
            var servedOfEight = 0
            var ninthServed = false
            var goodState: Int?
            var page = ""
            var stopped = false
            var log = ""
        }
        let outcome = try await onOwnThread { () throws -> Outcome in
            var outcome = Outcome()
            let port = try freeLoopbackPort(datagram: true)
            let metrics = try freeLoopbackPort()
            let config = NSTemporaryDirectory() + "dsu-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).conf"
            try "dsu:\n  listen: 127.0.0.1:\(port)\n  maximum_clients: 8\n  maximum_clients_per_source: 8\nmetrics: 127.0.0.1:\(metrics)\n".write(toFile: config, atomically: true, encoding: .utf8)
            let daemon = try ReplayDaemon(arguments: ["--loop", "--config", config])
            try Self.waitForServer(port: port)

            let attacker = try DSUTestClient(serverPort: port)
            let good = attacker.packet(type: 0x10_0001, body: [1, 0, 0, 0, 0])
            var badCRC = good
            badCRC[20] ^= 1
            var wrongVersion = good
            wrongVersion[4] = 0xE8
            var serverMagic = good
            serverMagic.replaceSubrange(0..<4, with: Array("DSUS".utf8))
            var longLength = good
            longLength[6] = 0xFF
            longLength[7] = 0xFF
            var generator = SystemRandomNumberGenerator()
            let garbage = (0..<200).map { _ in (0..<Int.random(in: 1...120, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) } }
            let hostile: [(String, [UInt8])] =
                [("too_short", Array(good.prefix(19))), ("bad_crc", badCRC), ("bad_version", wrongVersion), ("bad_magic", serverMagic),
                 ("bad_length", longLength), ("bad_body", attacker.packet(type: 0x10_0001, body: [9, 0, 0, 0])),
                 ("unknown_type", attacker.packet(type: 0x20_0000, body: []))]
            for (_, bytes) in hostile { try attacker.send(raw: bytes) }
            for bytes in garbage { try attacker.send(raw: bytes) }
            outcome.reasons = hostile.map(\.0)
            outcome.sent = hostile.count + garbage.count
            outcome.answeredHostile = !attacker.receivesNothing(for: 0.5)

            // Eight clients are served; the ninth is refused.
            let clients = try (0..<9).map { _ in try DSUTestClient(serverPort: port) }
            for client in clients { try client.requestPadData(.allPads) }
            for client in clients.prefix(8) {
                if case .padData? = client.receive(within: 2) { outcome.servedOfEight += 1 }
            }
            outcome.ninthServed = !clients[8].receivesNothing(for: 0.5)
            try clients[8].requestPadData(.allPads)
            try attacker.requestPortInformation(slots: [0])
            if case .portInformation(let info)? = attacker.receive(within: 2) { outcome.goodState = info.state }
            outcome.page = try httpRequest(port: metrics, path: "/metrics").body
            outcome.stopped = daemon.stop()
            outcome.log = daemon.log
            return outcome
        }
        #expect(!outcome.answeredHostile, "a hostile datagram was answered")
        #expect(outcome.servedOfEight == 8, "\(outcome.servedOfEight) of 8 clients got pad data")
        #expect(!outcome.ninthServed, "the ninth client was served beyond maximum_clients 8")
        #expect(outcome.goodState == 2, "a good request after the hostile ones was answered")
        for reason in outcome.reasons {
            #expect(outcome.page.contains("motiond_dsu_datagrams_dropped_total{reason=\"\(reason)\"}"), "no count for \(reason)")
        }
        let lines = outcome.page.split(separator: "\n")
        let refused = lines.first { $0.hasPrefix("motiond_dsu_datagrams_dropped_total{reason=\"too_many_clients\"}") }
        #expect(refused?.split(separator: " ").last == "2", "\(refused ?? "no too_many_clients count")")
        let dropped = lines.filter { $0.hasPrefix("motiond_dsu_datagrams_dropped_total") && !$0.contains("too_many") }
            .compactMap { Int($0.split(separator: " ").last!) }.reduce(0, +)
        #expect(dropped == outcome.sent, "dropped \(dropped) of \(outcome.sent) hostile datagrams")
        #expect(outcome.stopped, "SIGTERM ended the daemon")
        #expect(outcome.log.components(separatedBy: "DSU request refused: too many clients").count - 1 == 1, "\(outcome.log)")
    }

    /// 1,000 emulators at once, the limits raised to let them in: beyond a sample's send budget (32)
    /// they take turns, and each gets pad data that keeps the rules. The recording plays at a tenth of
    /// its speed (28.6 Hz): the tests run a debug build beside other suites on two cores.
    @Test func aThousandClientsOverTheSendBudgetTakeTurns() async throws {
        let (numbers, violations, stopped) = try await onOwnThread { () throws -> ([Int], [String], Bool) in
            let port = try freeLoopbackPort(datagram: true)
            let config = NSTemporaryDirectory() + "dsu-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).conf"
            let limits = "  maximum_clients: 1000\n  maximum_clients_per_source: 1000\n"
            try "dsu:\n  listen: 127.0.0.1:\(port)\n\(limits)".write(toFile: config, atomically: true, encoding: .utf8)
            let daemon = try ReplayDaemon(arguments: ["--loop", "--speed", "0.1", "--config", config])
            try Self.waitForServer(port: port)
            var limit = rlimit()
            getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            limit.rlim_cur = limit.rlim_max
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            // Opened under `environmentLock`: with these the test process holds more than a launch may
            // (`launchableDescriptors`), and a launch beside it waits until they are closed.
            let clients = try environmentLock.withLock { try (0..<1000).map { _ in try DSUTestClient(serverPort: port) } }
            // As emulators start, a thousand over a second, each asking again every second (Dolphin).
            for _ in 0..<3 {
                for (index, client) in clients.enumerated() {
                    try client.requestPadData(.slot(0))
                    if index % 10 == 9 { Thread.sleep(forTimeInterval: 0.01) }
                }
            }
            // What each got (its socket's buffer holds some 250 packets; the reading takes seconds).
            var numbers: [Int] = []
            var violations: [String] = []
            for client in clients {
                numbers.append(client.receiveQueued().count { if case .padData = $0 { true } else { false } })
                violations += client.violations
            }
            return (numbers, violations, daemon.stop())
        }
        let sorted = numbers.sorted()
        print("DSU 1000 clients: packets per client in 3 s (32 of them per sample): min \(sorted.first!), median \(sorted[500]), max \(sorted.last!)")
        #expect(numbers.filter { $0 > 0 }.count == 1000, "\(numbers.filter { $0 > 0 }.count) of 1000 clients got pad data")
        #expect(violations.isEmpty, "\(violations.prefix(3))")
        #expect(stopped)
    }
}

/// A value behind a lock, for the emulator threads.
final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

extension Thread {
    /// Runs `body(0..<count)` on threads of their own; `wait()` on the result waits for all.
    static func detachedGroup(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) -> DispatchGroup {
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            Thread.detachNewThread {
                body(index)
                group.leave()
            }
        }
        return group
    }
}

extension DSUServerTests {
    /// A port another program holds fails the start, saying so, rather than sharing the port (with
    /// SO_REUSEADDR two UDP sockets may bind one port, and the requests go to either). The socket
    /// listens before the DSU part starts, so the second daemon is watched until it exits.
    @Test func aPortAlreadyInUseFailsTheStart() async throws {
        let (exited, log) = try await onOwnThread { () throws -> (Bool, String) in
            let port = try freeLoopbackPort(datagram: true)
            let first = try ReplayDaemon(arguments: ["--loop", "--dsu", "127.0.0.1:\(port)"])
            try Self.waitForServer(port: port)
            defer { first.stop() }
            let second: ReplayDaemon
            do {
                second = try ReplayDaemon(arguments: ["--loop", "--dsu", "127.0.0.1:\(port)"])
            } catch {
                return (true, "\(error)")
            }
            let exited = second.process.waitUntilEnded(seconds: 5)
            return (exited, second.log)
        }
        #expect(exited, "a second motiond kept running with its DSU port in use")
        #expect(log.contains("cannot listen"), "\(log)")
    }
}
