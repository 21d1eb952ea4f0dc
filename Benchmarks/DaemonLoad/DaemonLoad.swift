import ArgumentParser
import Foundation
import MotionClient
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

    @Option(help: "Scenarios to run, of: idle, 100x1, 1000x100, largest, poll.")
    var scenarios: [String] = ["idle", "100x1", "1000x100", "largest", "poll"]

    func run() throws {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)

        let testbed = try Testbed()
        try testbed.add(fixture: "imu-buffered")
        let executable = motiond ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("motiond").path
        print("motiond: \(executable); \(ProcessInfo.processInfo.activeProcessorCount) cores; \(seconds) s per measurement\n")

        var heaviestRSS = 0
        if scenarios.contains("idle") {
            let daemon = try Daemon(executable: executable)
            sleep(2)
            let probe = ProcessProbe(pid: daemon.pid)
            let a = probe.read()
            usleep(UInt32(seconds * 1e6))
            let usage = ProcessProbe.usage(from: a, to: probe.read())
            print("no clients (sensors closed): \(usage); RSS \(probe.status("VmRSS")) kB, of which anonymous \(probe.status("RssAnon")) kB")
        }
        let loads = [("100x1", 100.0, 1), ("1000x100", 1000.0, 100), ("largest", 100.0, largest)].filter { scenarios.contains($0.0) }
        for (_, rate, clients) in loads {
            let daemon = try Daemon(executable: executable)
            let feeder = Feeder(testbed: testbed, device: "iio:device0", node: "/dev/iio:device0", rate: rate)
            defer { feeder.stop() }
            let load = try LoadClients(socket: daemon.socket, count: clients)
            load.start()
            try load.sendToAll(#"{"class":"WATCH","streams":["motion"],"interval":\#(1 / rate)}"#)
            sleep(2)
            let probe = ProcessProbe(pid: daemon.pid)
            load.startCounting()
            let fedBefore = feeder.scansFed
            let a = probe.read()
            usleep(UInt32(seconds * 1e6))
            let b = probe.read()
            let fed = feeder.scansFed - fedBefore
            load.stop()
            let usage = ProcessProbe.usage(from: a, to: b)
            let received = load.received
            let latencies = load.latencies.sorted()
            func percentile(_ p: Double) -> Double {
                latencies.isEmpty ? .nan : Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]) * 1e-6
            }
            let rss = probe.status("VmRSS"), peak = probe.status("VmHWM"), anonymous = probe.status("RssAnon")
            heaviestRSS = max(heaviestRSS, peak)
            print(String(
                format: "%4.0f Hz, %4d clients: %@; RSS %d kB (peak %d; anonymous %d)\n    scans fed %d; motion lines per client min %d max %d (expected ≈ %d); dropped %d; latency p50 %.3f ms, p99 %.3f ms, max %.3f ms",
                rate, clients, usage.description, rss, peak, anonymous, fed, received.min() ?? 0, received.max() ?? 0, fed, load.dropped,
                percentile(0.5), percentile(0.99), percentile(1.0)))
        }
        if scenarios.contains("poll") {
            let daemon = try Daemon(executable: executable)
            let feeder = Feeder(testbed: testbed, device: "iio:device0", node: "/dev/iio:device0", rate: 100)
            defer { feeder.stop() }
            let client = try BlockingClient(path: daemon.socket)
            _ = try client.roundTrip(#"{"class":"POLL","streams":["motion"]}"#, until: "SNAPSHOT")  // opens the sensors
            let start = Feeder.now()
            var trips = 0
            while Feeder.now() - start < Int64(seconds * 1e9) {
                _ = try client.roundTrip(#"{"class":"POLL","streams":["motion"]}"#, until: "SNAPSHOT")
                trips += 1
            }
            print(String(format: "poll round trips on one connection: %.0f per second", Double(trips) / (Double(Feeder.now() - start) * 1e-9)))
        }
        print("peak RSS over the loaded runs: \(heaviestRSS) kB")
    }
}

/// A motiond child process on a socket of its own, killed when released.
final class Daemon {
    let process = Process()
    let socket: String
    var pid: Int32 { process.processIdentifier }

    init(executable: String) throws {
        let directory = NSTemporaryDirectory() + "daemon-load-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        socket = directory + "/motiond.sock"
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--socket", socket, "--state-directory", directory + "/state", "--log-level", "warning"]
        _ = FileManager.default.createFile(atPath: directory + "/motiond.log", contents: nil)
        process.standardError = FileHandle(forWritingAtPath: directory + "/motiond.log")
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while (try? BlockingClient(path: socket)) == nil {
            guard Date() < deadline, process.isRunning else { throw LoadError("motiond did not start: see \(directory)/motiond.log") }
            usleep(10_000)
        }
    }

    deinit {
        kill(pid, SIGTERM)
        process.waitUntilExit()
    }
}

/// One blocking connection, for request/reply round trips.
final class BlockingClient {
    private let fd: Int32
    private var pending: [UInt8] = []

    init(path: String) throws {
        fd = try UnixSocket.connect(to: path)
    }

    deinit { close(fd) }

    /// Sends `request` and reads lines until one of class `name` comes.
    func roundTrip(_ request: String, until name: String) throws -> [UInt8] {
        let bytes = Array((request + "\n").utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else { throw LoadError("write: errno \(errno)") }
        let prefix = Array(#"{"class":"\#(name)""#.utf8)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(pending[..<newline])
                pending.removeFirst(newline + 1)
                if line.starts(with: prefix) { return line }
                if line.starts(with: Array(#"{"class":"ERROR""#.utf8)) { throw LoadError(String(decoding: line, as: UTF8.self)) }
            }
            let n = read(fd, &buffer, buffer.count)
            guard n > 0 else { throw LoadError("the daemon closed the connection") }
            pending += buffer[0..<n]
        }
    }
}
