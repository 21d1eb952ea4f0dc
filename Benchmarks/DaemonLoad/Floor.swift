import Foundation
import MotionSystem

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

    /// Runs the ticking child for `seconds` at `rate` and measures it as the daemon is measured.
    static func measure(rate: Double, seconds: Double) throws -> ProcessProbe.Usage {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = ["--tick-at", String(rate)]
        try child.run()
        defer {
            child.terminate()
            child.waitUntilExit()
        }
        usleep(500_000)
        let probe = ProcessProbe(pid: child.processIdentifier)
        let a = probe.read()
        usleep(UInt32(seconds * 1e6))
        return ProcessProbe.usage(from: a, to: probe.read())
    }
}
