import Foundation
import MotionWire
import Synchronization
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

extension DaemonLoad {
    /// The chip's own pedometer against the step detector on the same bma400 fixture
    /// (`wrist-bma400-steps`), one client watching `pedometer` at a 1 s interval: a walk of 1.8 steps
    /// a second, the chip's count rising and its step event pushed with each step as
    /// `bma400_interrupt` does (drivers/iio/accel/bma400_core.c:1666–1686, Linux 6.12), then as long
    /// at rest. With the chip, motiond's wake-ups should follow the events and the interval; with
    /// `--no-chip-functions`, the accelerometer runs for the step detector (fed at 25 Hz, the rate it
    /// asks for, through the fixture's buffer) whether anyone walks or not. Wake-ups are motiond's
    /// threads' voluntary context switches (beside the times they were put on a CPU, schedstat's,
    /// which count preemptions too), reads those of `in_steps_input` (inotify).
    func chipSteps(executable: String) throws {
        for usesChip in [true, false] {
            let wrist = try ChipWrist(executable: executable, arguments: usesChip ? [] : ["--no-chip-functions"])
            let feeder = usesChip ? nil : Feeder(testbed: wrist.testbed, device: "iio:device0", node: "/dev/iio:device0", rate: 25)
            defer {
                feeder?.stop()
                wrist.daemon.signal(SIGTERM)
            }
            let client = try TestClient(path: wrist.daemon.socket)
            _ = try client.next("VERSION")
            try client.send(#"{"class":"WATCH","streams":["pedometer"],"interval":1}"#)
            _ = try client.next("WATCHING")
            sleep(2)
            let probe = ProcessProbe(pid: wrist.daemon.process.processIdentifier)
            let walking = try wrist.measure(probe: probe, seconds: seconds, stepsPerSecond: 1.8)
            let resting = try wrist.measure(probe: probe, seconds: seconds, stepsPerSecond: 0)
            var last: PedometerMessage?
            while let line = try? client.next("PEDOMETER", seconds: 0.1) { last = try? client.decode(PedometerMessage.self, line) }
            let path = usesChip ? "chip (its counter and step events)" : "software (--no-chip-functions: the accelerometer at 25 Hz)"
            print(String(
                format: "chip-steps, %@: walking %.2f wake-ups/s (%.2f put on a CPU, preemptions counted; %.2f reads of in_steps_input/s), at rest %.2f wake-ups/s (%.2f; %.2f reads/s); CPU %.3f %% walking, %.3f %% at rest; %d steps walked, PEDOMETER says %d since the first read",
                path, walking.voluntaryPerSecond, walking.usage.runsPerSecond, walking.readsPerSecond, resting.voluntaryPerSecond, resting.usage.runsPerSecond,
                resting.readsPerSecond, walking.usage.cpuPercent, resting.usage.cpuPercent, wrist.stepsWalked, last?.steps ?? 0))
            print("    walking, wake-ups by thread: \(walking.usage.byThread)")
            print("    at rest, wake-ups by thread: \(resting.usage.byThread)")
        }
    }
}

/// A bma400 wrist device under umockdev whose chip the benchmark plays: its event descriptors an
/// `IIOEventFeed`, each step setting the count and pushing the step event.
final class ChipWrist: @unchecked Sendable {
    // @unchecked: the count changes on the walking thread only while `measure` waits for it to end.
    /// `IIO_MOD_EVENT_CODE(IIO_STEPS, 0, IIO_NO_MOD, IIO_EV_TYPE_CHANGE, IIO_EV_DIR_NONE)`: CHANGE (5) << 56 |
    /// NONE (3) << 48 | IIO_STEPS (20) << 32 (include/uapi/linux/iio/types.h; include/linux/iio/events.h:24–28).
    static let stepEventCode: UInt64 = 5 << 56 | 3 << 48 | 20 << 32

    let testbed: Testbed
    let events: IIOEventFeed
    let daemon: DaemonProcess
    /// The count the fixture starts at (its `in_steps_input`).
    private(set) var count = 16_777_000
    private(set) var stepsWalked = 0

    init(executable: String, arguments: [String]) throws {
        testbed = try Testbed()
        try testbed.add(fixture: "wrist-bma400-steps")
        try testbed.setAttribute("iio:device0", "in_steps_input", "\(count)\n")
        let directory = NSTemporaryDirectory() + "chip-steps-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        events = try IIOEventFeed(testbed: testbed, directory: directory)
        daemon = try DaemonProcess(
            socket: directory + "/motiond.sock", arguments: ["--state-directory", directory, "--log-level", "warning"] + arguments,
            executable: executable, inheriting: events.fifos)
        try events.openWriters()
    }

    /// One step: the count rises, and, while its step event is enabled (the driver maps the step
    /// interrupt only then: `bma400_steps_event_enable`, bma400_core.c:1140–1156), the chip says so.
    func step() throws {
        count += 1
        stepsWalked += 1
        try testbed.setAttribute("iio:device0", "in_steps_input", "\(count)\n")
        guard try testbed.attribute("iio:device0", "events/in_steps_change_en").hasPrefix("1") else { return }
        events.push(Self.stepEventCode)
    }

    /// The voluntary context switches of every thread of `pid` so far (/proc/PID/task/*/status): each
    /// is a thread that went to sleep and was woken, whatever else ran on the machine (schedstat's
    /// count also has each preemption, which a machine busy with other work multiplies).
    static func voluntarySwitches(of pid: Int32) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.reduce(0) { sum, task in
            let status = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") }
            return sum + (line.flatMap { Int($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") } ?? 0)
        }
    }

    /// motiond's wake-ups and the counter's reads over `seconds`, walking at `stepsPerSecond` (0: at rest).
    func measure(probe: ProcessProbe, seconds: Double, stepsPerSecond: Double) throws -> (usage: ProcessProbe.Usage, voluntaryPerSecond: Double, readsPerSecond: Double) {
        let stop = Atomic<Bool>(false)
        let walked = DispatchSemaphore(value: 0)
        let walker = Thread { [self] in
            let start = Date()
            var taken = 0
            while !stop.load(ordering: .relaxed) {
                if stepsPerSecond > 0, Double(taken) < Date().timeIntervalSince(start) * stepsPerSecond {
                    try? step()
                    taken += 1
                }
                usleep(10_000)
            }
            walked.signal()
        }
        let a = probe.read()
        let voluntary = Self.voluntarySwitches(of: probe.pid)
        walker.start()
        let reads = try testbed.reads(of: "in_steps_input", on: "iio:device0", during: seconds)
        let b = probe.read()
        let woken = Self.voluntarySwitches(of: probe.pid) - voluntary
        stop.store(true, ordering: .relaxed)
        walked.wait()
        return (ProcessProbe.usage(from: a, to: b), Double(woken) / seconds, Double(reads) / seconds)
    }
}
