import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Fixtures/logind-stand-in.py on a private system bus, read back: the delay locks it handed out, when
/// each was let go (it sees the hang-up of the pipe it gave, as logind does), and when it emitted each
/// `PrepareForSleep`. Its times are CLOCK_MONOTONIC seconds (Python's `time.monotonic`), as is
/// `monotonicSeconds()`.
public final class LogindStandIn {
    public let peer: Peer

    /// The stand-in's script.
    public static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/logind-stand-in.py").standardized.path
    }

    /// Starts the stand-in on `bus`; returns once it owns `org.freedesktop.login1`.
    public init(on bus: PrivateSystemBus) throws {
        peer = try Peer("/usr/bin/python3", arguments: [Self.script], bus: bus)
        try waitUntil(seconds: 20) { peer.output.contains("Owned org.freedesktop.login1") }
    }

    /// Its lines for `event` (`Inhibit`, `Released`, `PrepareForSleep`), split into words.
    public func events(_ event: String) -> [[String]] {
        peer.output.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }.filter { $0.first == event }
    }

    /// The time a line gives (after `at`), s on CLOCK_MONOTONIC.
    public static func time(_ words: [String]) -> Double? {
        words.firstIndex(of: "at").flatMap { $0 + 1 < words.count ? Double(words[$0 + 1]) : nil }
    }

    /// How many delay locks were asked for so far.
    public var locks: Int { events("Inhibit").count }

    /// When lock `number` (1 for the first) was let go, s (nil: still held).
    public func released(_ number: Int) -> Double? {
        events("Released").first { $0.count > 1 && $0[1] == "\(number)" }.flatMap(Self.time)
    }

    /// When the `number`th `PrepareForSleep(start)` was emitted, s (nil: not yet).
    public func prepared(_ start: Bool, _ number: Int) -> Double? {
        let lines = events("PrepareForSleep").filter { $0.count > 1 && $0[1] == (start ? "true" : "false") }
        return lines.count >= number ? Self.time(lines[number - 1]) : nil
    }

    /// Has it emit `PrepareForSleep(start)`, as logind does before a sleep (true) and after the resume.
    public func prepareForSleep(_ start: Bool) {
        peer.signal(start ? SIGUSR1 : SIGUSR2)
    }
}

/// CLOCK_MONOTONIC now, s: the logind stand-in's clock.
public func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// What the kernel says of a process: its resident memory, open descriptors and CPU time.
public enum ProcessFigures {
    /// `VmRSS` of /proc/PID/status, kB: all it holds in memory, its files' pages too (nil: no such process).
    public static func residentKilobytes(_ pid: Int32) -> Int? { status("VmRSS", of: pid) }

    /// `RssAnon` of /proc/PID/status, kB: its heap and stacks, where a leak grows.
    public static func anonymousKilobytes(_ pid: Int32) -> Int? { status("RssAnon", of: pid) }

    /// A `Name:   N kB` line of /proc/PID/status.
    private static func status(_ name: String, of pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        return status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
            .flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") }
    }

    /// The descriptors open in `pid` (entries of /proc/PID/fd), with what each is (its link).
    public static func descriptors(_ pid: Int32) -> [String: String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        var links: [String: String] = [:]
        for name in names { links[name] = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(name)")) ?? "?" }
        return links
    }

    /// utime + stime of /proc/PID/stat (fields 14 and 15, proc(5)), s: the CPU the process used so far.
    public static func cpuSeconds(_ pid: Int32) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let end = stat.lastIndex(of: ")") else { return nil }
        // After "pid (comm)" the fields start at 3 (state): utime is the 12th of them, stime the 13th.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
