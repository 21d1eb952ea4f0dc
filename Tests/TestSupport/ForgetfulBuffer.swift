import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A buffered IIO driver whose chip forgets its state across a suspend (sleep-and-recovery.md: the
/// bmi260/bmi270 handhelds, bazzite #1763 and #2334): a thread of its own writes a scan of what the chip
/// measures into the testbed's device node every `period` while `buffer/enable` reads 1; from
/// `suspend` on it writes none, and its attributes are back at the driver's defaults, until the buffer
/// is enabled afresh (`buffer/enable` seen at 0, then at 1: the kernel's `iio_buffer_store_enable` does
/// nothing for 1 over 1, and only a 0 → 1 runs the driver's postenable, which sets the chip up again).
/// With `hysteresis` (an HID hub's `in_accel_hysteresis`) it sends no repeat while that attribute is
/// above 0, as a hub that honours its change sensitivity does.
public final class ForgetfulBuffer: @unchecked Sendable {
    // @unchecked: the mutable state is behind `state`; the rest is set once.
    private struct State {
        var counts: [Int]
        var running = true
        /// Suspended and not yet enabled afresh.
        var forgot = false
        /// `buffer/enable` read 0 since the suspend.
        var sawDisabled = false
        /// When it was enabled afresh after the last suspend (CLOCK_MONOTONIC, s).
        var enabledAfresh: Double?
        var scans = 0
    }

    private let state: Mutex<State>
    private let directory: String
    private let ended = DispatchSemaphore(value: 0)

    /// Drives `device` (`iio:device0`) of `testbed` through `node`: `scan` makes one scan's bytes from
    /// the counts measured, the time (ns, CLOCK_REALTIME: the fixtures' `current_timestamp_clock`) and
    /// the device's sysfs directory (to read which `scan_elements` are enabled).
    public init(
        testbed: Testbed, device: String = "iio:device0", node: String = "/dev/iio:device0", counts: [Int], period: Double = 0.01,
        hysteresis: String? = nil, scan: @escaping @Sendable (_ counts: [Int], _ time: Int64, _ directory: String) -> [UInt8]
    ) {
        state = Mutex(State(counts: counts))
        directory = testbed.root + "/sys/bus/iio/devices/" + device
        let descriptor = testbed.controlDescriptor(for: node)
        Thread { [self, directory] in
            var lastSent: [Int] = []
            while true {
                // Read under the lock, so that a suspend never meets a value read before it.
                let due: [Int]?? = state.withLock { state in
                    guard state.running else { return .none }
                    let enabled = Self.read(directory + "/buffer/enable")
                    if state.forgot {
                        if enabled == "0" { state.sawDisabled = true }
                        if state.sawDisabled && enabled == "1" {
                            state.forgot = false
                            state.enabledAfresh = monotonicSeconds()
                        }
                    }
                    let sensitivity = hysteresis.flatMap { Double(Self.read(directory + "/" + $0)) } ?? 0
                    let sends = !state.forgot && enabled == "1" && !(sensitivity > 0 && state.counts == lastSent)
                    return .some(sends ? state.counts : nil)
                }
                guard let due else { break }
                if let counts = due {
                    var now = timespec()
                    clock_gettime(CLOCK_REALTIME, &now)
                    let bytes = scan(counts, Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec), directory)
                    if bytes.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) == bytes.count {
                        lastSent = counts
                        state.withLock { $0.scans += 1 }
                    }
                }
                usleep(UInt32(period * 1e6))
            }
            ended.signal()
        }.start()
    }

    deinit { stop() }

    /// Stops its thread (and waits for it).
    public func stop() {
        let wasRunning = state.withLock { state in
            defer { state.running = false }
            return state.running
        }
        if wasRunning { ended.wait() }
    }

    /// Sets what the chip measures (raw counts, in the scan's channel order).
    public func measure(_ counts: [Int]) { state.withLock { $0.counts = counts } }

    /// The machine sleeps: no scan from now until the buffer is enabled afresh, and each of
    /// `defaults` (attribute → the driver's default) is written over what was set.
    public func suspend(defaults: [String: String]) throws {
        state.withLock { state in
            state.forgot = true
            // The buffer as the machine went to sleep: one disabled then is enabled afresh by a 1.
            state.sawDisabled = Self.read(directory + "/buffer/enable") == "0"
            state.enabledAfresh = nil
        }
        for (attribute, value) in defaults {
            try Data((value + "\n").utf8).write(to: URL(fileURLWithPath: directory + "/" + attribute))
        }
    }

    /// When the buffer was enabled afresh after the last suspend (CLOCK_MONOTONIC, s; nil: not yet).
    public var enabledAfresh: Double? { state.withLock { $0.enabledAfresh } }

    /// Scans written so far.
    public var scans: Int { state.withLock { $0.scans } }

    /// An attribute's value: up to its newline, or the NUL a shorter value written over a longer one
    /// left in the testbed's file (umockdev writes in place: `1\n` then `0` reads `0\0`).
    private static func read(_ path: String) -> String {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return String(text.prefix { $0 != "\n" && $0 != "\0" }).trimmingCharacters(in: .whitespaces)
    }
}
