import Foundation
import MotionClient
import MotionWire
import Synchronization
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Everything at once, for a long time: a steady watcher of motion at 100 Hz, while a magnetometer
/// is unplugged and replugged, a client flips its gyroscope watch, fuzzed lines arrive, one client
/// reads slowly and another never, and the configuration is reloaded, good and bad. Prints the
/// daemon's threads, descriptors and memory and the watcher's rate and duplicates at the start and
/// the end: they must be flat.
struct Soak {
    var seconds: Double
    var executable: String

    /// A polled magnetometer (an AK09911, as on the tablet fixture), plugged and unplugged. No device
    /// node: umockdev cannot make one again for a device it removed.
    static let magnetometer = """
        P: /devices/platform/i2c-9/i2c-AK09911:00/iio:device7
        E: SUBSYSTEM=iio
        E: DEVTYPE=iio_device
        A: name=ak09911\\n
        A: in_magn_x_raw=190\\n
        A: in_magn_y_raw=0\\n
        A: in_magn_z_raw=-460\\n
        A: in_magn_scale=0.001\\n
        A: sampling_frequency=50\\n
        """
    static let magnetometerPath = "/sys/devices/platform/i2c-9/i2c-AK09911:00/iio:device7"

    /// Counters the load threads keep.
    final class Counters: Sendable {
        let motion = Atomic<Int>(0)
        let duplicates = Atomic<Int>(0)
        let magnetometer = Atomic<Int>(0)
        let ended = Atomic<Int>(0)
        let watchChanges = Atomic<Int>(0)
        let fuzzLines = Atomic<Int>(0)
        let slowDropped = Atomic<Int>(0)
        let silentDisconnected = Atomic<Int>(0)
        let replugs = Atomic<Int>(0)
        let reloads = Atomic<Int>(0)
        let errors = Mutex<[String]>([])
        let stop = Atomic<Bool>(false)

        var stopping: Bool { stop.load(ordering: .relaxed) }

        func note(_ error: any Error, in actor: String) {
            errors.withLock { if $0.count < 20 { $0.append("\(actor): \(error)") } }
        }
    }

    func run(testbed: Testbed) throws {
        let directory = NSTemporaryDirectory() + "soak-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let config = directory + "/motiond.conf"
        try "declination: 3\n".write(toFile: config, atomically: true, encoding: .utf8)
        try testbed.add(Self.magnetometer)
        let daemon = try Daemon(executable: executable, arguments: ["--config", config])
        let feeder = Feeder(testbed: testbed, device: "iio:device0", node: "/dev/iio:device0", rate: 100)
        defer { feeder.stop() }
        let counters = Counters()
        let socket = daemon.socket
        var threads: [Thread] = []
        func spawn(_ name: String, _ body: @escaping @Sendable () throws -> Void) {
            let thread = Thread {
                while !counters.stopping {
                    do { try body() } catch {
                        if !counters.stopping { counters.note(error, in: name) }
                        usleep(200_000)
                    }
                }
            }
            threads.append(thread)
            thread.start()
        }
        spawn("watcher") { try Self.watchMotion(socket, counters) }
        spawn("magnetometer watcher") { try Self.watchMagnetometer(socket, counters) }
        spawn("watch churn") { try Self.churnWatches(socket, counters) }
        spawn("slow reader") { try Self.readSlowly(socket, counters) }
        spawn("silent client") { try Self.neverRead(socket, counters) }
        spawn("fuzzer") {
            let result = try ProtocolFuzz(total: 20_000, connections: 2, seed: UInt64(counters.fuzzLines.load(ordering: .relaxed))).run(against: daemon)
            counters.fuzzLines.add(result.sent, ordering: .relaxed)
            if result.crashed { throw LoadError("motiond died") }
            sleep(1)
        }
        spawn("reloads") {
            sleep(5)
            let good = counters.reloads.load(ordering: .relaxed) % 2 == 0
            try (good ? "declination: \(Int.random(in: -10...10))\n" : "declination: [not a number\n").write(toFile: config, atomically: true, encoding: .utf8)
            kill(daemon.pid, SIGHUP)
            counters.reloads.add(1, ordering: .relaxed)
        }

        let probe = ProcessProbe(pid: daemon.pid)
        let start = Feeder.now()
        var lastMotion = 0
        var lastReport = start
        var firstReport: String?
        // Hot-plug on this thread: the testbed is not to be shared between threads.
        var plugged = true
        while Double(Feeder.now() - start) * 1e-9 < seconds && daemon.process.isRunning {
            sleep(2)
            if plugged { testbed.remove(syspath: Self.magnetometerPath) } else { try testbed.add(Self.magnetometer) }
            plugged.toggle()
            counters.replugs.add(1, ordering: .relaxed)
            let now = Feeder.now()
            if now - lastReport >= 10_000_000_000 || Double(now - start) * 1e-9 >= seconds {
                let motion = counters.motion.load(ordering: .relaxed)
                let rate = Double(motion - lastMotion) / (Double(now - lastReport) * 1e-9)
                let line = String(
                    format: "%5.0f s: %@; watcher %.1f motion lines/s, %d duplicates so far; magnetometer lines %d, ENDED %d; watch changes %d; fuzz lines %d; slow reader dropped %d; silent client disconnected %d times; replugs %d; reloads %d",
                    Double(now - start) * 1e-9, probe.footprint, rate, counters.duplicates.load(ordering: .relaxed),
                    counters.magnetometer.load(ordering: .relaxed), counters.ended.load(ordering: .relaxed), counters.watchChanges.load(ordering: .relaxed),
                    counters.fuzzLines.load(ordering: .relaxed), counters.slowDropped.load(ordering: .relaxed),
                    counters.silentDisconnected.load(ordering: .relaxed), counters.replugs.load(ordering: .relaxed), counters.reloads.load(ordering: .relaxed))
                FileHandle.standardOutput.write(Data((line + "\n").utf8))
                if firstReport == nil, now - start >= 20_000_000_000 { firstReport = line }
                lastMotion = motion
                lastReport = now
            }
        }
        counters.stop.store(true, ordering: .relaxed)
        let alive = daemon.process.isRunning
        defer { daemon.stop() }  // the load threads still hold it
        print("soak: daemon \(alive ? "alive" : "DIED") after \(String(format: "%.0f", Double(Feeder.now() - start) * 1e-9)) s")
        if let firstReport { print("soak: start: \(firstReport)") }
        for error in counters.errors.withLock({ $0 }) { print("soak: client error (the daemon's answer to a hostile client, or a real fault): \(error)") }
        guard alive else { throw LoadError("motiond died during the soak") }
    }

    /// Watches motion at 100 Hz, counting lines and timestamps that do not increase.
    static func watchMotion(_ socket: String, _ counters: Counters) throws {
        let connection = try LineConnection(socketPath: socket)
        try connection.send(raw: Array(#"{"class":"WATCH","streams":["motion"],"interval":0.01}\#n"#.utf8))
        var last: Int64 = 0
        while !counters.stopping {
            let line = try connection.nextLine(timeout: 5)
            guard Wire.className(of: line) == MotionMessage.className else { continue }
            let stamp = try Wire.decode(MotionMessage.self, from: line).timestamp
            if stamp <= last { counters.duplicates.add(1, ordering: .relaxed) }
            last = stamp
            counters.motion.add(1, ordering: .relaxed)
        }
    }

    /// Watches the magnetometer that comes and goes; watches again after each `ENDED`.
    static func watchMagnetometer(_ socket: String, _ counters: Counters) throws {
        let connection = try LineConnection(socketPath: socket)
        let watch = Array(#"{"class":"WATCH","streams":["magnetometer"],"interval":0.04}\#n"#.utf8)
        try connection.send(raw: watch)
        while !counters.stopping {
            let line = try connection.nextLine(timeout: 5)
            switch Wire.className(of: line) {
            case MagnetometerMessage.className: counters.magnetometer.add(1, ordering: .relaxed)
            case Ended.className, ErrorReply.className:
                if Wire.className(of: line) == Ended.className { counters.ended.add(1, ordering: .relaxed) }
                usleep(500_000)
                try connection.send(raw: watch)
            default: continue
            }
        }
    }

    /// Flips a gyroscope watch between 1 and 2 ms and off, as fast as the replies come.
    static func churnWatches(_ socket: String, _ counters: Counters) throws {
        let connection = try LineConnection(socketPath: socket)
        let requests = [
            #"{"class":"WATCH","streams":["gyroscope"],"interval":0.001}"#, #"{"class":"WATCH","streams":["gyroscope"],"interval":0.002}"#,
            #"{"class":"WATCH","streams":["gyroscope"],"enable":false}"#,
        ]
        var index = 0
        while !counters.stopping {
            _ = try connection.roundTrip(requests[index % requests.count], until: Watching.className)
            index += 1
            counters.watchChanges.add(1, ordering: .relaxed)
            usleep(5_000)
        }
    }

    /// Watches motion at 100 Hz and reads ten lines a second: the daemon drops for it and says how many.
    static func readSlowly(_ socket: String, _ counters: Counters) throws {
        let connection = try LineConnection(socketPath: socket)
        try connection.send(raw: Array(#"{"class":"WATCH","streams":["motion"],"interval":0.01}\#n"#.utf8))
        while !counters.stopping {
            usleep(100_000)
            let line = try connection.nextLine(timeout: 5)
            if Wire.className(of: line) == Dropped.className {
                counters.slowDropped.add(try Wire.decode(Dropped.self, from: line).count, ordering: .relaxed)
            }
        }
    }

    /// Asks for STATUS 1,000 times and reads nothing: more replies than the socket buffer and its queue
    /// hold together, fewer than the flood limit, so the daemon holds them until the stuck-client
    /// timeout, then lets it go.
    static func neverRead(_ socket: String, _ counters: Counters) throws {
        let connection = try LineConnection(socketPath: socket)
        try connection.send(raw: Array(String(repeating: #"{"class":"STATUS"}"# + "\n", count: 1000).utf8))
        let start = Feeder.now()
        // Closed by the daemon once stuck for its timeout; then the socket reads end-of-file.
        let peerClosed = Int16(0x2000)  // POLLRDHUP (poll(2)), which Glibc's module does not export
        var pfd = pollfd(fd: connection.descriptor, events: peerClosed, revents: 0)
        while !counters.stopping, Feeder.now() - start < 30_000_000_000 {
            if poll(&pfd, 1, 500) > 0 {
                counters.silentDisconnected.add(1, ordering: .relaxed)
                return
            }
        }
        throw LoadError("a client that reads nothing was still connected after 30 s")
    }
}
