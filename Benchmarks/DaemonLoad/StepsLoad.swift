import Foundation
import MotionClient
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

extension DaemonLoad {
    /// The pedometer and the activity with nothing else watched: one client on `pedometer` and
    /// `activity`, the fake accelerometer fed at 50 Hz (a device whose slowest rate is 50 Hz; motiond
    /// asks 25). motiond reads it in one-second batches (the buffer's watermark), so its CPU and
    /// wake-ups are read against a process that wakes once a second and one that wakes 50 times.
    func steps(executable: String, testbed: Testbed) throws {
        let slow = try Floor.measure(["--tick-at", "1"], seconds: seconds)
        let fast = try Floor.measure(["--tick-at", "50"], seconds: seconds)
        let daemon = try Daemon(executable: executable)
        let feeder = Feeder(testbed: testbed, device: "iio:device0", node: "/dev/iio:device0", rate: 50)
        defer { feeder.stop() }
        let client = try LineConnection(socketPath: daemon.socket)
        _ = try client.roundTrip(#"{"class":"WATCH","streams":["pedometer","activity"]}"#, until: "WATCHING")
        sleep(3)
        let probe = ProcessProbe(pid: daemon.pid)
        let fedBefore = feeder.scansFed
        let a = probe.read()
        usleep(UInt32(seconds * 1e6))
        let usage = ProcessProbe.usage(from: a, to: probe.read())
        print(String(
            format: "steps: pedometer + activity, accelerometer fed at 50 Hz (%d scans): %@ (floor: waking once a second %.3f %%, 50 times %.3f %%)",
            feeder.scansFed - fedBefore, usage.description, slow.cpuPercent, fast.cpuPercent))
        print("    wake-ups by thread: \(usage.byThread)")
    }
}
