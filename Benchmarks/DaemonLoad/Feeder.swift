import Foundation
import Synchronization
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Plays a fake IMU (the imu-buffered fixture): writes scans of the enabled elements (accelerometer
/// and gyroscope s16s, a CLOCK_MONOTONIC timestamp aligned to 8 bytes) to a testbed's
/// `/dev/iio:deviceN` at a steady rate, as the kernel would, while the buffer is enabled; and, as the
/// kernel's poll does, makes them readable only once `buffer/watermark` scans wait (each keeps the
/// timestamp of its sampling). As the kernel's buffer does, it drops a new scan when `buffer/length`
/// scans wait unread (written and not yet read from the node, or held back for the watermark).
final class Feeder: Sendable {
    private let stopRequested = Atomic<Bool>(false)
    private let fed = Atomic<Int>(0)
    private let overflowed = Atomic<Int>(0)

    /// Starts feeding `node` of `device` at `rate` Hz. With `stampsSchedule`, each scan carries the
    /// time it was due (exact multiples of the period), not the time it was made: consecutive scans
    /// are one period apart, so a reader finds a lost scan as a gap.
    init(testbed: Testbed, device: String, node: String, rate: Double, stampsSchedule: Bool = false) {
        let descriptor = testbed.controlDescriptor(for: node)
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        // The node's reading end (a pty's), only asked how many bytes wait unread (FIONREAD).
        let readingEnd = open(testbed.root + node, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        let deviceDirectory = "\(testbed.root)/sys/bus/iio/devices/\(device)"
        @Sendable func read(_ attribute: String) -> String? {
            (try? String(contentsOfFile: "\(deviceDirectory)/\(attribute)", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines.union(["\0"]))
        }
        let elements = ["accel_x", "accel_y", "accel_z", "anglvel_x", "anglvel_y", "anglvel_z"]
        let period = Int64(1e9 / rate)
        let thread = Thread { [self] in
            var scan: [UInt8] = []
            var next = Feeder.now()
            var enabled = false
            var watermark = 1
            var length = 0
            var enabledElements: [Bool] = []
            var timestamped = false
            var waiting: [UInt8] = []
            var checkedAt: Int64 = 0
            var i = 0
            while !stopRequested.load(ordering: .relaxed) {
                next += period
                var deadline = timespec(tv_sec: Int(next / 1_000_000_000), tv_nsec: Int(next % 1_000_000_000))
                while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nil) == EINTR {}
                if next - checkedAt > 100_000_000 {
                    enabled = read("buffer/enable") == "1"
                    watermark = read("buffer/watermark").flatMap { Int($0) } ?? 1
                    length = read("buffer/length").flatMap { Int($0) } ?? 0
                    enabledElements = elements.map { read("scan_elements/in_\($0)_en") == "1" }
                    timestamped = read("scan_elements/in_timestamp_en") == "1"
                    checkedAt = next
                }
                guard enabled else {
                    waiting.removeAll()
                    continue
                }
                i += 1
                // At rest, face up, with a little noise on every axis: accel (0, 0, 1 g), gyro ≈ 0.
                let values: [Int16] = [Int16(i % 7) - 3, Int16(i % 5) - 2, 16384 + Int16(i % 3), Int16(i % 3) - 1, Int16(i % 4) - 2, 1]
                scan.removeAll(keepingCapacity: true)
                for (value, isEnabled) in zip(values, enabledElements) where isEnabled {
                    withUnsafeBytes(of: value.littleEndian) { scan += $0 }
                }
                if timestamped {
                    scan += [UInt8](repeating: 0, count: (8 - scan.count % 8) % 8)
                    withUnsafeBytes(of: (stampsSchedule ? next : Feeder.now()).littleEndian) { scan += $0 }
                }
                guard !scan.isEmpty else { continue }
                var unread: Int32 = 0
                if length > 0, readingEnd >= 0, withUnsafeMutablePointer(to: &unread, { ioctl(readingEnd, UInt(FIONREAD), $0) }) == 0,
                    Int(unread) + waiting.count + scan.count > length * scan.count
                {
                    overflowed.add(1, ordering: .relaxed)
                    continue
                }
                waiting += scan
                guard waiting.count >= watermark * scan.count else { continue }
                if write(descriptor, waiting, waiting.count) == waiting.count { fed.add(waiting.count / scan.count, ordering: .relaxed) }
                waiting.removeAll(keepingCapacity: true)
            }
            if readingEnd >= 0 { close(readingEnd) }
        }
        thread.qualityOfService = .userInteractive
        thread.start()
    }

    /// Scans written so far.
    var scansFed: Int { fed.load(ordering: .relaxed) }

    /// Scans dropped so far because the buffer was full, as the kernel drops them.
    var scansOverflowed: Int { overflowed.load(ordering: .relaxed) }

    func stop() { stopRequested.store(true, ordering: .relaxed) }

    /// CLOCK_MONOTONIC, ns: the clock the daemon stamps IIO samples with.
    static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
