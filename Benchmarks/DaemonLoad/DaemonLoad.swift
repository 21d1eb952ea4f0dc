import ArgumentParser
import Foundation
import MotionClient
import MotionWire
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Measures motiond under load: a release `motiond` child process on a fake buffered IMU (umockdev)
/// fed at the rate, watched by many clients; CPU, wake-ups and memory from /proc, latency from each
/// sample's IIO timestamp to its receipt.
///
///     swift build -c release --product motiond && swift build -c release --product daemon-load
///     umockdev-wrapper .build/release/daemon-load
@main
struct DaemonLoad: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon-load", abstract: "Measure motiond's CPU, wake-ups, memory and latency under load.")

    @Option(help: "The motiond to measure (default: the one next to this program).")
    var motiond: String?

    @Option(help: "Seconds each measurement lasts, after a warm-up of 2 s.")
    var seconds: Double = 10

    @Option(help: "Clients of the largest scenario.")
    var largest: Int = 1000

    @Option(help: "Scenarios to run, of: floor, idle, 100x1, 100x1-batched, 1000x100, largest, poll, orientation; mqtt, network, dsu, steps, chip-steps (the bma400's own pedometer against the step detector); and, not by default, stall (1 kHz, motiond stopped for --stall-milliseconds each second: scans lost), fuzz, soak (for --seconds), history (issue 40's HISTORY attack) and live (BROAD trials through fake hardware: scripts/score-live).")
    var scenarios: [String] = ["floor", "idle", "100x1", "100x1-batched", "1000x100", "largest", "poll", "orientation", "mqtt", "network", "dsu", "steps", "chip-steps"]

    @Option(help: .hidden)
    var tickAt: Double?

    @Option(help: .hidden)
    var writeTo: Int?

    @Option(help: .hidden)
    var sendTo: Int?

    @Option(help: .hidden)
    var readFrom: String?

    @Option(help: .hidden)
    var bufferLength: Int?

    @Option(help: .hidden)
    var lineSize: Int?

    @Option(help: "How long the stall scenario stops motiond each second, ms (0: a run without stalls, for comparison).")
    var stallMilliseconds = 20

    @Option(help: "Lines the fuzz scenario sends.")
    var fuzzLines = 10_000_000

    @Option(help: "The fuzz scenario's seed: the same seed sends the same lines.")
    var seed: UInt64 = 1

    @Option(help: "The live scenario's BROAD trials directory.")
    var broad = "../shared/data/broad-dev"

    @Option(help: "The live scenario's trials (default: every <trial>_imu.csv.gz there).")
    var trials: [String] = []

    @Option(help: "Seconds of each trial the live scenario plays, from 10 s before its movement phase.")
    var sliceSeconds = 45.0

    @Option(help: "Where the live scenario writes its CSV files.")
    var liveOutput = "live-accuracy"

    func run() throws {
        if let readFrom, let bufferLength, let writeTo, let lineSize {
            Floor.readAndWrite(device: readFrom, length: bufferLength, watermark: 1, clients: writeTo, lineSize: lineSize)
        }
        if let tickAt, let writeTo { Floor.write(at: tickAt, clients: writeTo, lineSize: 750) }
        if let tickAt, let sendTo { Floor.send(at: tickAt, clients: sendTo, datagramSize: 100) }
        if let tickAt { Floor.tick(at: tickAt) }
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)

        let executable = motiond ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("motiond").path
        print("motiond: \(executable); \(ProcessInfo.processInfo.activeProcessorCount) cores; \(seconds) s per measurement\n")
        if scenarios.contains("live") {
            let names = trials.isEmpty
                ? (try FileManager.default.contentsOfDirectory(atPath: broad)).filter { $0.hasSuffix("_imu.csv.gz") }.map { String($0.dropLast("_imu.csv.gz".count)) }.sorted()
                : trials
            try LiveAccuracy(executable: executable, trialsDirectory: broad, output: liveOutput, sliceSeconds: sliceSeconds).run(trials: names)
            guard scenarios.contains(where: { $0 != "live" }) else { return }
        }
        // A testbed of its own (the bma400 wrist), before the IMU's: the daemons started run in the
        // newest testbed.
        if scenarios.contains("chip-steps") {
            try chipSteps(executable: executable)
            guard scenarios.contains(where: { $0 != "chip-steps" && $0 != "live" }) else { return }
        }
        let testbed = try Testbed()
        try testbed.add(fixture: "imu-buffered")

        var heaviestRSS = 0
        // What each unbatched scenario is read against: its CPU % as a multiple of the floor's.
        var floors: [String: (cpuPercent: Double, what: String)] = [:]
        if scenarios.contains("floor") {
            for rate in [100.0, 10.0] {
                let usage = try Floor.measure(["--tick-at", String(rate)], seconds: seconds)
                print(String(format: "floor: a process that only wakes %.0f times a second: %@ (%.1f µs of CPU per wake-up)",
                             rate, usage.description, usage.cpuPercent / 100 / max(usage.runsPerSecond, 1) * 1e6))
                if rate == 100 { floors["100x1"] = (usage.cpuPercent, "waking 100 times a second; target 1.5×") }
            }
            let writes = try Floor.measure(["--tick-at", "1000", "--write-to", "100"], seconds: seconds)
            print("floor: a process that wakes 1000 times a second and writes a 750-byte line to each of 100 sockets: \(writes)")
            floors["1000x100"] = (writes.cpuPercent, "waking 1000 times a second and writing the lines; target 1.3×")
        }
        if scenarios.contains("idle") {
            let daemon = try Daemon(executable: executable)
            sleep(2)
            let probe = ProcessProbe(pid: daemon.pid)
            let a = probe.read()
            usleep(UInt32(seconds * 1e6))
            let usage = ProcessProbe.usage(from: a, to: probe.read())
            print("no clients (sensors closed): \(usage); RSS \(probe.status("VmRSS")) kB, of which anonymous \(probe.status("RssAnon")) kB")
            if usage.runsPerSecond > 0 { print("    wake-ups by thread: \(usage.byThread)") }
            print("    resident by mapping (kB): \(probe.residentByMapping().prefix(8).map { "\($0.name) \($0.kilobytes)" }.joined(separator: ", "))")
        }
        // (name, rate, clients, latency the clients accept)
        let loads = [("100x1", 100.0, 1, 0.0), ("100x1-batched", 100.0, 1, 0.1), ("1000x100", 1000.0, 100, 0.0), ("largest", 100.0, largest, 0.0)]
            .filter { scenarios.contains($0.0) }
        for (name, rate, clients, latency) in loads {
            let daemon = try Daemon(executable: executable)
            let feeder = Feeder(testbed: testbed, device: "iio:device0", node: "/dev/iio:device0", rate: rate)
            defer { feeder.stop() }
            let load = try LoadClients(socket: daemon.socket, count: clients)
            load.start()
            try load.sendToAll(#"{"class":"WATCH","streams":["motion"],"interval":\#(1 / rate),"latency":\#(latency)}"#)
            sleep(2)
            let probe = ProcessProbe(pid: daemon.pid)
            load.startCounting()
            let fedBefore = feeder.scansFed
            let a = probe.read()
            usleep(UInt32(seconds * 1e6))
            let b = probe.read()
            let fed = feeder.scansFed - fedBefore
            load.stop()
            // The buffer motiond set, for the floor that reads as it does.
            let length = (try? testbed.attribute("iio:device0", "buffer/length")).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines.union(["\0"]))) } ?? 0
            let usage = ProcessProbe.usage(from: a, to: b)
            let received = load.received
            let latencies = load.latencies.sorted()
            func percentile(_ p: Double) -> Double {
                latencies.isEmpty ? .nan : Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]) * 1e-6
            }
            let rss = probe.status("VmRSS"), peak = probe.status("VmHWM"), anonymous = probe.status("RssAnon")
            heaviestRSS = max(heaviestRSS, peak)
            print(String(
                format: "%4.0f Hz, %4d clients, latency %.2f s: %@; RSS %d kB (peak %d; anonymous %d)\n    scans fed %d; motion lines per client min %d max %d (expected ≈ %d); dropped %d; latency p50 %.3f ms, p99 %.3f ms, max %.3f ms",
                rate, clients, latency, usage.description, rss, peak, anonymous, fed, received.min() ?? 0, received.max() ?? 0, fed, load.dropped,
                percentile(0.5), percentile(0.99), percentile(1.0)))
            print("    wake-ups by thread: \(usage.byThread)")
            if let floor = floors[name], floor.cpuPercent > 0 {
                print(String(format: "    %.2f× the floor's CPU (%@)", usage.cpuPercent / floor.cpuPercent, floor.what))
            }
            // The floor a daemon cannot go under, right after, on the same fake buffer at the same rate.
            guard latency == 0, ["100x1", "1000x100"].contains(name), length > 0 else { continue }
            let lineSize = received.reduce(0, +) > 0 ? Int((Double(load.motionBytes) / Double(received.reduce(0, +))).rounded()) : 750
            daemon.stop()
            feeder.stop()
            usleep(200_000)  // the feeder's last scan written
            let floorFeeder = Feeder(testbed: testbed, device: "iio:device0", node: "/dev/iio:device0", rate: rate)
            defer { floorFeeder.stop() }
            let floor = try Floor.measure(
                ["--read-from", "iio:device0", "--buffer-length", String(length), "--write-to", String(clients), "--line-size", String(lineSize)],
                seconds: seconds)
            floorFeeder.stop()
            try? testbed.setAttribute("iio:device0", "buffer/enable", "0\n")
            print(String(format: "    floor: a process that reads the same buffer (%d scans long) and writes a %d-byte line per scan to each of %d sockets: %@",
                         length, lineSize, clients, floor.description))
            print(String(format: "    %.2f× the read-and-write floor's CPU (target %@)", usage.cpuPercent / max(floor.cpuPercent, 1e-9), name == "100x1" ? "1.5×" : "1.3×"))
        }
        if scenarios.contains("stall") { try stall(executable: executable, testbed: testbed) }
        if scenarios.contains("poll") {
            let daemon = try Daemon(executable: executable)
            let feeder = Feeder(testbed: testbed, device: "iio:device0", node: "/dev/iio:device0", rate: 100)
            defer { feeder.stop() }
            let client = try LineConnection(socketPath: daemon.socket)
            _ = try client.roundTrip(#"{"class":"POLL","streams":["motion"]}"#, until: "SNAPSHOT")  // opens the sensors
            let start = Feeder.now()
            var trips = 0
            while Feeder.now() - start < Int64(seconds * 1e9) {
                _ = try client.roundTrip(#"{"class":"POLL","streams":["motion"]}"#, until: "SNAPSHOT")
                trips += 1
            }
            print(String(format: "poll round trips on one connection: %.0f per second", Double(trips) / (Double(Feeder.now() - start) * 1e-9)))
        }
        if scenarios.contains("orientation") { try orientation(executable: executable) }
        if scenarios.contains("fuzz") { try fuzz(executable: executable, testbed: testbed) }
        if scenarios.contains("mqtt") { try mqtt(executable: executable, testbed: testbed) }
        if scenarios.contains("network") { try network(executable: executable, testbed: testbed) }
        if scenarios.contains("dsu") { try dsu(executable: executable, testbed: testbed) }
        if scenarios.contains("steps") { try steps(executable: executable, testbed: testbed) }
        if scenarios.contains("history") { try history(executable: executable, testbed: testbed) }
        if scenarios.contains("soak") { try Soak(seconds: seconds, executable: executable).run(testbed: testbed) }
        if !loads.isEmpty { print("peak RSS over the loaded runs: \(heaviestRSS) kB") }
    }
}

extension DaemonLoad {
    /// A desktop's screen rotation: Debian's iio-sensor-proxy and motiond --dbus, one after the other
    /// on the same umockdev machines (a tablet's bmc150 with its motion events, then with them
    /// refused; a laptop's HID hub that honours its hysteresis), each with one monitor-sensor holding
    /// an accelerometer claim: their cost at rest, and the time each takes to report turns of 0, 0.3,
    /// 0.6 and 1 s (`scripts/rotation-side-by-side`, which runs them all, outside this process's testbed).
    func orientation(executable: String) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../scripts/rotation-side-by-side").standardized
        // The cost is a difference of two whole lives (see the script): a short window is mostly noise.
        for arguments in [["--cost", String(Int(max(seconds, 60)))], ["--turns", "12", "--durations", "0,0.3,0.6,1.0"]] {
            fflush(nil)  // what this process printed comes first
            let child = Process()
            child.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            // The script makes its own testbeds: this process's umockdev preload must not reach it. It
            // measures the motiond the other scenarios measure (the package's static build, say), under
            // Debian's python3, which has umockdev's GObject bindings.
            child.arguments = ["-u", "LD_PRELOAD", "-u", "UMOCKDEV_DIR", "/usr/bin/python3", script.path, "--motiond", executable] + arguments
            child.currentDirectoryURL = script.deletingLastPathComponent().deletingLastPathComponent()
            try child.run()
            child.waitUntilExit()
            guard child.terminationStatus == 0 else { throw LoadError("\(script.path) \(arguments.joined(separator: " ")) failed") }
        }
    }

    /// Issue 63's slack: a client watches motion at 1 kHz while motiond is stopped (SIGSTOP, every
    /// thread, then SIGCONT) for `stallMilliseconds` once a second; the feeder stamps its schedule
    /// and drops scans as a full kernel buffer does, so each scan lost is a gap in the client's stream.
    func stall(executable: String, testbed: Testbed) throws {
        let rate = 1000.0
        let daemon = try Daemon(executable: executable)
        let feeder = Feeder(testbed: testbed, device: "iio:device0", node: "/dev/iio:device0", rate: rate, stampsSchedule: true)
        defer { feeder.stop() }
        let load = try LoadClients(socket: daemon.socket, count: 1)
        load.period = Int64(1e9 / rate)
        load.start()
        try load.sendToAll(#"{"class":"WATCH","streams":["motion"],"interval":\#(1 / rate)}"#)
        sleep(2)
        let length = (try? testbed.attribute("iio:device0", "buffer/length"))?.trimmingCharacters(in: .whitespacesAndNewlines.union(["\0"])) ?? "?"
        load.startCounting()
        let (fedBefore, overflowedBefore) = (feeder.scansFed, feeder.scansOverflowed)
        var stalls = 0
        let start = Feeder.now()
        while Feeder.now() - start < Int64(seconds * 1e9) {
            usleep(UInt32(1_000_000 - stallMilliseconds * 1000))
            guard stallMilliseconds > 0 else { continue }
            kill(daemon.pid, SIGSTOP)
            usleep(UInt32(stallMilliseconds * 1000))
            kill(daemon.pid, SIGCONT)
            stalls += 1
        }
        usleep(200_000)  // the last stall's scans delivered
        load.stop()
        print("stall: 1000 Hz, 1 client, kernel buffer \(length) scans; motiond stopped \(stalls) times for \(stallMilliseconds) ms: "
            + "scans fed \(feeder.scansFed - fedBefore), dropped by the full buffer \(feeder.scansOverflowed - overflowedBefore); "
            + "motion lines \(load.received[0]), scans missing from the stream \(load.lost), DROPPED told \(load.dropped)")
    }

    /// Fuzzed lines on 8 connections while a client watches motion at 100 Hz; the daemon must live,
    /// answer STATUS after, and the watcher must have kept receiving.
    func fuzz(executable: String, testbed: Testbed) throws {
        let daemon = try Daemon(executable: executable)
        let feeder = Feeder(testbed: testbed, device: "iio:device0", node: "/dev/iio:device0", rate: 100)
        defer { feeder.stop() }
        let watcher = try LoadClients(socket: daemon.socket, count: 1)
        watcher.start()
        try watcher.sendToAll(#"{"class":"WATCH","streams":["motion"],"interval":0.01}"#)
        watcher.startCounting()
        let probe = ProcessProbe(pid: daemon.pid)
        print("fuzz, seed \(seed): before: \(probe.footprint)")
        let result = try ProtocolFuzz(total: fuzzLines, connections: 8, seed: seed).run(against: daemon)
        watcher.stop()
        print("fuzz: \(result)")
        guard !result.crashed else { throw LoadError("motiond died during the fuzz: see its log beside \(daemon.socket)") }
        let status = try LineConnection(socketPath: daemon.socket).roundTrip(#"{"class":"STATUS"}"#, until: "STATUS")
        print("fuzz: after: \(probe.footprint); STATUS answered (\(status.count) bytes); the watcher received \(watcher.received[0]) motion lines in \(String(format: "%.0f", result.seconds)) s")
    }
}

/// A motiond child process on a socket of its own, killed when released.
final class Daemon: @unchecked Sendable {
    // @unchecked: after `init`, only `Process`'s own thread-safe queries are made.
    let process = Process()
    let socket: String
    private let directory: String
    var pid: Int32 { process.processIdentifier }
    /// What it logged.
    var log: String { (try? String(contentsOfFile: directory + "/motiond.log", encoding: .utf8)) ?? "" }

    /// Starts `executable` with `arguments`; `stateFiles` (name, contents) are put in its state directory first.
    init(executable: String, arguments: [String] = [], environment: [String: String] = [:], stateFiles: [String: Data] = [:]) throws {
        directory = NSTemporaryDirectory() + "daemon-load-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory + "/state", withIntermediateDirectories: true)
        for (name, contents) in stateFiles { try contents.write(to: URL(fileURLWithPath: directory + "/state/" + name)) }
        socket = directory + "/motiond.sock"
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--socket", socket, "--state-directory", directory + "/state", "--log-level", "warning"] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        _ = FileManager.default.createFile(atPath: directory + "/motiond.log", contents: nil)
        process.standardError = FileHandle(forWritingAtPath: directory + "/motiond.log")
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while (try? LineConnection(socketPath: socket)) == nil {
            guard Date() < deadline, process.isRunning else { throw LoadError("motiond did not start: see \(directory)/motiond.log") }
            usleep(10_000)
        }
    }

    deinit { stop() }

    /// Stops the daemon (SIGTERM) and waits for it: for a caller whose threads may still hold it.
    func stop() {
        guard process.isRunning else { return }
        kill(pid, SIGTERM)
        process.waitUntilExit()
    }
}

extension LineConnection {
    /// Sends `request` and reads lines until one of class `name` comes.
    func roundTrip(_ request: String, until name: String) throws -> [UInt8] {
        try send(raw: Array((request + "\n").utf8))
        while true {
            let line = try nextLine(timeout: 10)
            switch Wire.className(of: line) {
            case name: return line
            case ErrorReply.className: throw LoadError(String(decoding: line, as: UTF8.self))
            default: continue
            }
        }
    }
}
