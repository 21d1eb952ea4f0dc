import Foundation
import MotionSystem

#if canImport(Glibc)
import Glibc
#endif

/// The least that waking up costs on this machine: a process that does nothing but wait for a
/// timerfd with poll(2) and read it, `rate` times a second. motiond's figures are read against it (in
/// a VM, one wake-up alone can cost tens of microseconds of CPU).
enum Floor {
    /// Ticks until killed (run as `daemon-load --tick-at RATE`, a child of the floor scenario).
    static func tick(at rate: Double) -> Never {
        guard case .success(let timer) = Syscall.makePeriodicTimer(period: Int64(1e9 / rate)) else { exit(1) }
        let expirations = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 8)
        while true {
            _ = Syscall.waitReadable(timer, timeoutMilliseconds: -1)
            _ = Syscall.read(timer, into: expirations)
        }
    }

    /// Ticks as `tick` does, and at each tick writes one `lineSize`-byte line to each of `clients`
    /// Unix sockets, one `write` each, as motiond at the least would; a second thread, not counted
    /// (named "reader"), reads them all.
    static func write(at rate: Double, clients: Int, lineSize: Int) -> Never {
        var ends: [(Int32, Int32)] = []
        for _ in 0..<clients {
            var pair: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else { exit(1) }
            ends.append((pair[0], pair[1]))
        }
        let readers = ends.map(\.1)
        Thread {
            _ = try? String("reader").write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
            var polled = readers.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                guard poll(&polled, nfds_t(polled.count), -1) > 0 else { continue }
                for entry in polled where entry.revents != 0 { _ = read(entry.fd, &buffer, buffer.count) }
            }
        }.start()
        let line = [UInt8](repeating: UInt8(ascii: "x"), count: lineSize - 1) + [UInt8(ascii: "\n")]
        guard case .success(let timer) = Syscall.makePeriodicTimer(period: Int64(1e9 / rate)) else { exit(1) }
        let expirations = UnsafeMutableRawBufferPointer.allocate(byteCount: 8, alignment: 8)
        while true {
            _ = Syscall.waitReadable(timer, timeoutMilliseconds: -1)
            _ = Syscall.read(timer, into: expirations)
            for (writer, _) in ends { _ = Glibc.write(writer, line, line.count) }
        }
    }

    /// Runs the ticking child (`arguments` after the program) for `seconds` and measures its threads
    /// but the reader as the daemon is measured.
    static func measure(_ arguments: [String], seconds: Double) throws -> ProcessProbe.Usage {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = arguments
        try child.run()
        defer {
            child.terminate()
            child.waitUntilExit()
        }
        usleep(500_000)
        let probe = ProcessProbe(pid: child.processIdentifier)
        var a = probe.read(), b = a
        usleep(UInt32(seconds * 1e6))
        b = probe.read()
        for (thread, reading) in b.threads where reading.name == "reader" {
            a.threads[thread] = nil
            b.threads[thread] = nil
        }
        return ProcessProbe.usage(from: a, to: b)
    }
}
