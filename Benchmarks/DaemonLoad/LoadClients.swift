import Foundation
import MotionClient
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Many clients of the daemon, each on its own connection, all read by one thread with poll(2). For
/// every MOTION line it notes the latency from the sample's IIO timestamp to its receipt.
final class LoadClients: @unchecked Sendable {
    // @unchecked: the reader thread owns the counters until `stop()` has joined it.
    private let descriptors: [Int32]
    private let stopRequested = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)
    private var thread: Thread?

    /// Motion lines received, per client.
    private(set) var received: [Int]
    /// Samples the daemon said it dropped, over all clients.
    private(set) var dropped = 0
    /// Latencies of received motion lines, ns (the first `latencyCapacity`).
    private(set) var latencies: [Int64] = []
    /// Bytes of the motion lines received (their newlines included), over all clients.
    private(set) var motionBytes = 0
    /// Scans missing from the streams, over all clients: with `period` set (ns; set it before
    /// `start()`) and the feeder stamping its schedule, each gap of n periods between two lines of a
    /// client is n − 1 scans lost.
    private(set) var lost = 0
    var period: Int64 = 0
    private static let latencyCapacity = 4_000_000

    /// Connects `count` clients to `socket`.
    init(socket path: String, count: Int) throws {
        var descriptors: [Int32] = []
        do {
            for _ in 0..<count {
                // A full listen backlog is waited out: 1000 connections arrive faster than they are accepted.
                descriptors.append(try UnixSocket.connect(to: path, patience: 10).take())
            }
        } catch {
            for fd in descriptors { close(fd) }
            throw error
        }
        self.descriptors = descriptors
        received = Array(repeating: 0, count: count)
        latencies.reserveCapacity(Self.latencyCapacity)
    }

    deinit {
        for fd in descriptors { close(fd) }
    }

    /// Sends one request line to every client.
    func sendToAll(_ request: String) throws {
        let bytes = Array((request + "\n").utf8)
        for fd in descriptors where write(fd, bytes, bytes.count) != bytes.count {
            throw LoadError("write to the daemon failed: errno \(errno)")
        }
    }

    /// Starts reading every connection.
    func start() {
        let thread = Thread { [self] in readAll() }
        thread.qualityOfService = .userInteractive
        self.thread = thread
        thread.start()
    }

    /// Stops reading and waits for the reader.
    func stop() {
        stopRequested.store(true, ordering: .relaxed)
        while !finished.load(ordering: .acquiring) { usleep(1000) }
    }

    private let counting = Atomic<Bool>(false)

    /// Counts only from now on.
    func startCounting() { counting.store(true, ordering: .relaxed) }

    private func readAll() {
        var polled = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var partial = Array(repeating: [UInt8](), count: descriptors.count)
        let motion = Array(#"{"class":"MOTION""#.utf8)
        let timestampKey = Array(#""timestamp":"#.utf8)
        let droppedClass = Array(#"{"class":"DROPPED""#.utf8)
        var lastStamp = Array(repeating: Int64(0), count: descriptors.count)
        while !stopRequested.load(ordering: .relaxed) {
            guard poll(&polled, nfds_t(polled.count), 100) > 0 else { continue }
            let now = Feeder.now()
            let counts = counting.load(ordering: .relaxed)
            for index in polled.indices where polled[index].revents != 0 {
                let count = read(descriptors[index], &buffer, buffer.count)
                guard count > 0 else { continue }
                var start = 0
                for i in 0..<count where buffer[i] == UInt8(ascii: "\n") {
                    let line = partial[index] + buffer[start..<i]
                    partial[index].removeAll(keepingCapacity: true)
                    start = i + 1
                    guard counts else { continue }
                    if line.starts(with: motion) {
                        received[index] += 1
                        motionBytes += line.count + 1
                        // Keys after `class` come in any order.
                        guard let key = line.firstRange(of: timestampKey) else { continue }
                        var stamp: Int64 = 0
                        for byte in line[key.upperBound...] {
                            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { break }
                            stamp = stamp * 10 + Int64(byte - UInt8(ascii: "0"))
                        }
                        if latencies.count < Self.latencyCapacity { latencies.append(now - stamp) }
                        if period > 0, lastStamp[index] > 0, stamp > lastStamp[index] {
                            lost += Int(((Double(stamp - lastStamp[index]) / Double(period)).rounded())) - 1
                        }
                        lastStamp[index] = stamp
                    } else if line.starts(with: droppedClass), let range = String(decoding: line, as: UTF8.self).range(of: #""count":"#) {
                        let text = String(decoding: line, as: UTF8.self)[range.upperBound...]
                        dropped += Int(text.prefix { $0.isNumber }) ?? 0
                    }
                }
                partial[index] += buffer[start..<count]
            }
        }
        finished.store(true, ordering: .releasing)
    }
}

struct LoadError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
