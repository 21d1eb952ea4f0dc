import Foundation
import Synchronization
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

extension DaemonLoad {
    /// Emulators on the DSU server: the fake IMU at 400 Hz and 1 kHz, 1 and 4 clients subscribed
    /// (each by slot, asking again every second as Dolphin does, on a thread of its own): motiond's
    /// CPU and wake-ups against the floor of a process that wakes as often, the latency from the
    /// sample's IIO timestamp to the packet's arrival, and the packets lost (gaps in the numbers).
    func dsu(executable: String, testbed: Testbed) throws {
        for rate in [400.0, 1000.0] {
            let floor = try Floor.measure(["--tick-at", String(rate)], seconds: seconds)
            print(String(format: "dsu: floor, a process that only wakes %.0f times a second: %@", rate, floor.description))
            for clients in [1, 4] {
                // The least any DSU server does: wake, send each client its datagram.
                let sending = try Floor.measure(["--tick-at", String(rate), "--send-to", String(clients)], seconds: seconds)
                let port = try freeLoopbackPort(datagram: true)
                let daemon = try Daemon(executable: executable, arguments: ["--dsu", "127.0.0.1:\(port)"])
                let feeder = Feeder(testbed: testbed, device: "iio:device0", node: "/dev/iio:device0", rate: rate)
                defer { feeder.stop() }
                let emulators = try (0..<clients).map { _ in try Emulator(port: port) }
                sleep(2)
                let probe = ProcessProbe(pid: daemon.pid)
                for emulator in emulators { emulator.counting.store(true, ordering: .relaxed) }
                let fedBefore = feeder.scansFed
                let a = probe.read()
                usleep(UInt32(seconds * 1e6))
                let b = probe.read()
                let fed = feeder.scansFed - fedBefore
                for emulator in emulators { emulator.stop() }
                let usage = ProcessProbe.usage(from: a, to: b)
                let latencies = emulators.flatMap(\.latencies).sorted()
                func percentile(_ p: Double) -> Double {
                    latencies.isEmpty ? .nan : Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]) * 1e-6
                }
                let received = emulators.map(\.received), lost = emulators.map(\.lost), violations = emulators.flatMap(\.violations)
                print(String(
                    format: "dsu: %4.0f Hz, %d clients: %@ (%.2f× the floor's CPU; %.2f× the %.2f %% of a process that wakes and sends each client a datagram); scans fed %d, packets per client min %d max %d, lost %d; latency p50 %.3f ms, p99 %.3f ms, max %.3f ms; rule violations %d",
                    rate, clients, usage.description, usage.cpuPercent / max(floor.cpuPercent, 1e-9),
                    usage.cpuPercent / max(sending.cpuPercent, 1e-9), sending.cpuPercent, fed, received.min() ?? 0, received.max() ?? 0,
                    lost.reduce(0, +), percentile(0.5), percentile(0.99), percentile(1), violations.count))
                print("    wake-ups by thread: \(usage.byThread)")
                if let first = violations.first { print("    first violation: \(first)") }
            }
        }
    }
}

/// One emulator: a DSU test client on a thread of its own that asks for slot 0 every second and
/// notes each packet's latency and the gaps in the packet numbers.
private final class Emulator: @unchecked Sendable {
    // @unchecked: the thread owns the counters until `stop()` has waited for it.
    let counting = Atomic<Bool>(false)
    private let stopRequested = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)
    private(set) var received = 0
    private(set) var lost = 0
    private(set) var latencies: [Int64] = []
    private(set) var violations: [String] = []

    init(port: Int) throws {
        let client = try DSUTestClient(serverPort: port)
        latencies.reserveCapacity(1 << 20)
        Thread { [self] in
            var lastRequest: Int64 = 0
            var lastNumber: UInt32?
            while !stopRequested.load(ordering: .relaxed) {
                if DSUTestClient.now() - lastRequest >= 1_000_000_000 {
                    try? client.requestPadData(.slot(0))
                    lastRequest = DSUTestClient.now()
                }
                guard case .padData(let data)? = client.receive(within: 0.1) else { continue }
                defer { lastNumber = data.packetNumber }
                guard counting.load(ordering: .relaxed) else { continue }
                received += 1
                if let lastNumber { lost += Int(data.packetNumber &- lastNumber) - 1 }
                latencies.append(data.received - Int64(data.timestamp) * 1000)
            }
            violations = client.violations
            finished.store(true, ordering: .releasing)
        }.start()
    }

    func stop() {
        stopRequested.store(true, ordering: .relaxed)
        while !finished.load(ordering: .acquiring) { usleep(1000) }
    }
}
