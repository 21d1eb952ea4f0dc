import Foundation
import MotionClient
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Lines a fuzzer sends: valid requests with hostile values, valid requests mutated byte by byte,
/// random bytes, and over-long lines. Seeded, so a crash is reproduced by its seed and line number.
struct FuzzLines: RandomNumberGenerator {
    private var generator: SplitMix64

    init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    mutating func next() -> UInt64 { generator.next() }

    private mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }

    private mutating func pick<T>(_ choices: [T]) -> T { choices[below(choices.count)] }

    private static let streams = ["motion", "accelerometer", "gyroscope", "magnetometer", "proximity", "orientation", "tilt", "hinge", "light", "", "MOTION"]
    private static let frames = ["xArbitraryZVertical", "xArbitraryCorrectedZVertical", "xMagneticNorthZVertical", "xTrueNorthZVertical", "north"]
    private static let numbers = [
        "0", "-1", "0.01", "0.001", "1e-400", "4.9e-324", "1e308", "1e309", "-0", "9007199254740993", "18446744073709551616",
        "123456789012345678901234567890", "0.0000001", "2", "NaN", "Infinity", "01", "1.", ".5", "true", "null", "\"0.01\"",
    ]
    private static let ids = ["1", "-9223372036854775808", "9223372036854775807", "9223372036854775808", "1.5", "\"a\"", "true", "null", "[]", "{}"]

    /// A request, valid in form, with values picked to be awkward.
    private mutating func hostileRequest() -> String {
        var fields = [#""class":"\#(pick(["WATCH", "POLL", "STATUS", "DEVICES", "watch", "NOPE", ""]))""#]
        if below(2) == 0 { fields.append(#""id":\#(pick(Self.ids))"#) }
        if below(3) > 0 {
            let streams = (0..<below(4)).map { _ in #""\#(pick(Self.streams))""# }.joined(separator: ",")
            fields.append(below(8) == 0 ? #""streams":"motion""# : #""streams":[\#(streams)]"#)
        }
        if below(2) == 0 { fields.append(#""interval":\#(pick(Self.numbers))"#) }
        if below(4) == 0 { fields.append(#""frame":"\#(pick(Self.frames))""#) }
        if below(4) == 0 { fields.append(#""enable":\#(pick(["true", "false", "0", "null"]))"#) }
        if below(8) == 0 { fields.append(#""extra":\#(String(repeating: "[", count: below(3000)))"#) }
        fields.shuffle(using: &self)
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// The next line, without its newline.
    mutating func line() -> [UInt8] {
        switch below(100) {
        case 0..<45:
            return Array(hostileRequest().utf8)
        case 45..<90:
            var bytes = Array(hostileRequest().utf8)
            for _ in 0...below(4) where !bytes.isEmpty {
                let at = below(bytes.count)
                switch below(5) {
                case 0: bytes[at] = UInt8(truncatingIfNeeded: next())
                case 1: bytes.insert(UInt8(truncatingIfNeeded: next()), at: at)
                case 2: bytes.removeSubrange(at..<min(bytes.count, at + 1 + below(8)))
                case 3: bytes.insert(contentsOf: bytes[at..<min(bytes.count, at + below(16))], at: at)
                default: bytes.insert(contentsOf: Array(pick(["\u{0}", "\u{FFFF}", "\\u0000", "\\ud800", "é", "\"", "\\"]).utf8), at: at)
                }
            }
            return bytes.filter { $0 != UInt8(ascii: "\n") }
        case 90..<98:
            return (0..<below(200)).map { _ in UInt8(truncatingIfNeeded: next()) }.filter { $0 != UInt8(ascii: "\n") }
        default:
            return Array(repeating: UInt8(ascii: "x"), count: 4096 + below(10_000))
        }
    }
}

/// Sends `total` fuzzed lines to a daemon over `connections` connections, reading every reply, and
/// checks after each batch that the daemon lives. A connection the daemon closes (for flooding, as it
/// should) is replaced.
struct ProtocolFuzz {
    var total: Int
    var connections: Int
    var seed: UInt64

    struct Result: CustomStringConvertible {
        var sent = 0
        var bytesSent = 0
        var repliesRead = 0
        var reconnects = 0
        var seconds = 0.0
        var crashed = false

        var description: String {
            String(
                format: "%d lines (%.1f MB) in %.1f s, %.0f lines/s; %d reply lines read; %d connections closed by the daemon and replaced; crashes: %d",
                sent, Double(bytesSent) / 1e6, seconds, Double(sent) / seconds, repliesRead, reconnects, crashed ? 1 : 0)
        }
    }

    func run(against daemon: Daemon) throws -> Result {
        var result = Result()
        var lines = FuzzLines(seed: seed)
        var descriptors = try (0..<connections).map { _ in try Self.connect(daemon.socket) }
        defer { for fd in descriptors { close(fd) } }
        var pending = Array(repeating: [UInt8](), count: connections)
        var offsets = Array(repeating: 0, count: connections)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        let start = Feeder.now()
        var lastCheck = 0
        while result.sent < total || pending.contains(where: { !$0.isEmpty }) {
            var polled = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN | POLLOUT), revents: 0) }
            guard poll(&polled, nfds_t(polled.count), 1000) >= 0 || errno == EINTR else { throw LoadError("poll: errno \(errno)") }
            for index in polled.indices where polled[index].revents != 0 {
                let fd = descriptors[index]
                var lost = polled[index].revents & Int16(POLLHUP | POLLERR) != 0
                if polled[index].revents & Int16(POLLIN) != 0 {
                    let n = read(fd, &buffer, buffer.count)
                    if n > 0 { result.repliesRead += buffer[0..<n].lazy.filter { $0 == UInt8(ascii: "\n") }.count } else { lost = true }
                }
                if !lost, polled[index].revents & Int16(POLLOUT) != 0 {
                    if pending[index].isEmpty, result.sent < total {
                        // A batch of lines per write, as a pipelining client sends them.
                        for _ in 0..<min(64, total - result.sent) {
                            pending[index] += lines.line() + [UInt8(ascii: "\n")]
                            result.sent += 1
                        }
                        offsets[index] = 0
                    }
                    if !pending[index].isEmpty {
                        let n = pending[index][offsets[index]...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                        if n > 0 {
                            offsets[index] += n
                            result.bytesSent += n
                            if offsets[index] == pending[index].count { pending[index].removeAll(keepingCapacity: true) }
                        } else if errno != EAGAIN && errno != EINTR {
                            lost = true
                        }
                    }
                }
                if lost {
                    close(fd)
                    pending[index].removeAll(keepingCapacity: true)
                    guard daemon.process.isRunning else { break }
                    descriptors[index] = try Self.connect(daemon.socket)
                    result.reconnects += 1
                }
            }
            if !daemon.process.isRunning {
                result.crashed = true
                break
            }
            if result.sent - lastCheck >= 1_000_000 {
                lastCheck = result.sent
                FileHandle.standardOutput.write(Data("  \(result.sent) lines sent, daemon alive\n".utf8))
            }
        }
        result.seconds = Double(Feeder.now() - start) * 1e-9
        return result
    }

    private static func connect(_ socket: String) throws -> Int32 {
        let fd = try UnixSocket.connect(to: socket, patience: 10).take()
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }
}
