import Foundation
import MotionWire
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 62's "Done when", on a whole motiond under umockdev: logind's sleeps told by its stand-in
/// (Fixtures/logind-stand-in.py on a private system bus: `Inhibit` answered with a pipe whose hang-up
/// is the release, as systemd's src/login/logind-inhibit.c does), and drivers that forget their
/// chip's state across the suspend (sleep-and-recovery.md, "What drivers forget"). What is expected is
/// systemd's docs/INHIBITOR_LOCKS.md ("Taking Delay Locks": a delay lock taken in advance, released
/// once the work before sleep is done, a new one taken after `PrepareForSleep(false)`) and the issue's
/// bounds: the lock let go within 2 s of `PrepareForSleep(true)`, samples at an existing watcher within
/// 1 s of `PrepareForSleep(false)`. The kernel freezes user space while it sleeps (power/freezing-of-
/// tasks.rst); SIGSTOP and SIGCONT around the "sleep" stand for it. Times are CLOCK_MONOTONIC, the
/// stand-in's and the test's alike.
extension Hardware {
    @Suite struct SleepResume {
        /// How the accelerometer is read, and how each driver forgets.
        enum Capture: String, CaseIterable, Sendable, CustomTestStringConvertible {
            /// The imu-buffered bmi160: its buffer silent after the resume until enabled afresh, its
            /// `sampling_frequency` back at the chip's reset value (100 Hz: BMI160 datasheet, ACC_CONF
            /// reset 0x28, acc_odr 8 = 100 Hz, as the fixture recorded it).
            case buffered
            /// A bmc150 read through sysfs: `sampling_frequency` back at what the fixture recorded.
            case polled
            /// A bma250e resting on its motion events: the events' `*_en` back at 0 (the chip's reset
            /// state; bmc150-accel enables them only when told), `sampling_frequency` at the fixture's
            /// `15.620000` (motiond asks for the same rate at rest, and its write shows as its own `15.62`).
            case motionEvents
            /// An HID hub's buffer resting on its raised hysteresis: the buffer silent until enabled
            /// afresh, `in_accel_hysteresis` back at 0 and the rate at the fixture's.
            case hysteresis

            var testDescription: String { rawValue }

            var fixture: String {
                switch self {
                case .buffered: "imu-buffered"
                case .polled: "tablet-bosch-mirror-matrix"
                case .motionEvents: "tablet-motion-events"
                case .hysteresis: "laptop-hid-buffered-accelerometer"
                }
            }

            /// The attribute that sets the rate.
            var rateAttribute: String { self == .hysteresis ? "in_accel_sampling_frequency" : "sampling_frequency" }

            /// What the driver's attributes read after a resume that forgot them: as the fixture
            /// recorded them before motiond wrote anything (the driver's probe), and the events off.
            func defaults(recorded: String) -> [String: String] {
                var values = [rateAttribute: recorded]
                switch self {
                case .motionEvents: for axis in ["x", "y", "z"] { values["events/in_accel_\(axis)_roc_either_en"] = "0" }
                case .hysteresis: values["in_accel_hysteresis"] = "0"
                case .buffered, .polled: break
                }
                return values
            }

            /// Only event streams rest: these are watched for their orientation, the others for samples.
            var rests: Bool { self == .motionEvents || self == .hysteresis }
        }

        /// motiond on a capture's fixture, logind's stand-in on its system bus, and a watcher.
        final class Machine {
            let capture: Capture
            let testbed: Testbed
            let bus: PrivateSystemBus
            let logind: LogindStandIn
            let daemon: DaemonProcess
            let client: TestClient
            let driver: ForgetfulBuffer?
            let handler: IoctlHandler?
            let state: String
            /// The rate as the fixture recorded it, before motiond wrote any: the driver's at probe.
            let recorded: String
            /// The motion events' FIFO write end (-1: none).
            private var events: Int32 = -1
            var pid: Int32 { daemon.process.processIdentifier }

            /// `_IOR('i', 0x90, int)`, IIO_GET_EVENT_FD_IOCTL (include/uapi/linux/iio/events.h), and the
            /// numbers of the descriptors the daemon is handed for its events (rotation-and-posture.md):
            /// the kernel makes a new one at each call (`iio_event_getfd`), and the daemon closes the one it
            /// had at each sleep, so each arm is answered with the next it inherited, all on one FIFO.
            static let getEventDescriptor: UInt = 0x8004_6990
            static let eventDescriptors: [Int32] = [50, 51, 52, 53]

            /// - Parameters:
            ///   - history, calibration: history.json's and calibration.json's text to start with (nil: none).
            ///   - dbus: the D-Bus drop-in on (`--dbus`), on the private bus.
            init(_ capture: Capture, history: String? = nil, calibration: String? = nil, dbus: Bool = false) throws {
                self.capture = capture
                testbed = try Testbed()
                try testbed.add(fixture: capture.fixture)
                recorded = String(try testbed.attribute("iio:device0", capture.rateAttribute).prefix { $0 != "\n" })
                bus = try PrivateSystemBus()
                logind = try LogindStandIn(on: bus)
                state = NSTemporaryDirectory() + "motiond-sleep-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
                try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
                for (name, text) in [("history.json", history), ("calibration.json", calibration)] {
                    if let text { try Data(text.utf8).write(to: URL(fileURLWithPath: state + "/" + name)) }
                }
                switch capture {
                case .buffered:
                    // x, y, z and the gyroscope's three, raw; 16384 counts = 1 g at the fixture's scale.
                    driver = ForgetfulBuffer(testbed: testbed, counts: [0, 0, 16384, 0, 0, 0]) { counts, time, directory in
                        let gyroscope = (try? String(contentsOfFile: directory + "/scan_elements/in_anglvel_x_en", encoding: .utf8))?.hasPrefix("1") == true
                        return gyroscope
                            ? Testbed.imuScan(accelerometer: Array(counts[0..<3]), gyroscope: Array(counts[3..<6]), time: time)
                            : Testbed.accelerometerScan(Array(counts[0..<3]), time: time)
                    }
                case .hysteresis:
                    // hid-sensor-accel-3d: 16-bit values in 32-bit storage, 4 bytes of padding, the
                    // timestamp; a report every 100 ms, as a hub set to report every period does.
                    driver = ForgetfulBuffer(testbed: testbed, counts: [0, 0, -1000], period: 0.1, hysteresis: "in_accel_hysteresis") { counts, time, _ in
                        var scan: [UInt8] = []
                        for v in counts { scan += withUnsafeBytes(of: Int32(v).littleEndian, Array.init) }
                        return scan + [0, 0, 0, 0] + withUnsafeBytes(of: time.littleEndian, Array.init)
                    }
                case .polled, .motionEvents:
                    driver = nil
                }
                let environment = ["DBUS_SYSTEM_BUS_ADDRESS": bus.address]
                let arguments = ["--state-directory", state] + (dbus ? ["--dbus"] : [])
                if capture == .motionEvents {
                    let arms = Mutex(0)
                    handler = try testbed.handleIoctls(on: "/dev/iio:device0") { request in
                        guard request == Machine.getEventDescriptor else { return .failure(ENOTTY) }
                        let arm = arms.withLock { arm in
                            defer { arm += 1 }
                            return arm
                        }
                        return arm < Machine.eventDescriptors.count ? .integer(Machine.eventDescriptors[arm]) : .failure(EMFILE)
                    }
                    let fifo = state + "/events"
                    guard mkfifo(fifo, 0o600) == 0 else { throw TestbedError("mkfifo: errno \(errno)") }
                    daemon = try DaemonProcess(
                        socket: temporarySocketPath(), arguments: arguments, environment: environment,
                        inheriting: Dictionary(uniqueKeysWithValues: Machine.eventDescriptors.map { ($0, fifo) }))
                    // The daemon holds the FIFO open for reading and writing: this open does not wait.
                    events = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
                } else {
                    handler = nil
                    daemon = try DaemonProcess(socket: temporarySocketPath(), arguments: arguments, environment: environment)
                }
                client = try TestClient.greeted(path: daemon.socket)
            }

            deinit {
                driver?.stop()
                kill(pid, SIGCONT)
                daemon.signal(SIGTERM)
                if events >= 0 { close(events) }
                try? FileManager.default.removeItem(atPath: state)
            }

            /// The daemon's STATUS.
            func status() throws -> StatusReply {
                try client.send(#"{"class":"STATUS"}"#)
                return try client.decode(StatusReply.self, try client.next("STATUS"))
            }

            /// Waits until the accelerometer rests as `mode`.
            func waitForRest(_ mode: String, seconds: Double = 10) throws {
                try waitUntil(seconds: seconds) { (try? status())?.sensors.first?.rest == mode }
            }

            /// An attribute of the device as the testbed holds it: up to its newline, or the NUL a shorter
            /// value written over a longer one leaves in the testbed's file.
            func attribute(_ name: String) throws -> String {
                String(try testbed.attribute("iio:device0", name).prefix { $0 != "\n" && $0 != "\0" })
            }

            /// Turns the device during the sleep: gravity from the chip's z (face up) to its x, or back.
            func turn(edgewise: Bool) throws {
                switch capture {
                case .buffered: driver?.measure(edgewise ? [16384, 0, 0, 0, 0, 0] : [0, 0, 16384, 0, 0, 0])
                case .hysteresis: driver?.measure(edgewise ? [1000, 0, 0] : [0, 0, -1000])
                case .polled:
                    try testbed.setAttribute("iio:device0", "in_accel_x_raw", edgewise ? "1000\n" : "0\n")
                    try testbed.setAttribute("iio:device0", "in_accel_z_raw", edgewise ? "0\n" : "-1000\n")
                case .motionEvents:
                    try testbed.setAttribute("iio:device0", "in_accel_x_raw", edgewise ? "256\n" : "0\n")
                    try testbed.setAttribute("iio:device0", "in_accel_z_raw", edgewise ? "0\n" : "256\n")
                }
            }

            /// One sleep as logind and the kernel make it, the `cycle`th: `PrepareForSleep(true)`, the
            /// lock let go, user space frozen (SIGSTOP) while the driver forgets (`defaults`) and the device
            /// turns, thawed, `PrepareForSleep(false)`. Returns the seconds from `PrepareForSleep(true)`
            /// to the release, and when `PrepareForSleep(false)` was emitted.
            func sleep(cycle: Int, defaults: [String: String], edgewise: Bool) throws -> (held: Double, woke: Double) {
                logind.prepareForSleep(true)
                try waitUntil(seconds: 10) { logind.released(cycle) != nil }
                let held = try #require(logind.released(cycle)) - (try #require(logind.prepared(true, cycle)))
                kill(pid, SIGSTOP)
                if let driver {
                    try driver.suspend(defaults: defaults)
                } else {
                    for (name, value) in defaults { try testbed.setAttribute("iio:device0", name, value + "\n") }
                }
                try turn(edgewise: edgewise)
                kill(pid, SIGCONT)
                logind.prepareForSleep(false)
                try waitUntil(seconds: 10) { logind.prepared(false, cycle) != nil }
                return (held, try #require(logind.prepared(false, cycle)))
            }

            /// What went on, for a failure: the daemon stopped, its log, the buffer's state, logind's lines.
            func diagnosis() -> String {
                kill(pid, SIGCONT)
                _ = daemon.secondsToExit(after: SIGTERM)
                let enable = (try? testbed.attribute("iio:device0", "buffer/enable")).map { Array($0.utf8).description } ?? "none"
                return "buffer/enable \(enable), \(driver?.scans ?? 0) scans written; logind: \(logind.peer.output)\nmotiond: \(daemon.finalLog())"
            }

            /// The first stream message after the turn: an ACCELEROMETER with gravity along x
            /// (`edgewise`) or along z, or an ORIENTATION other than `before`; when it came
            /// (CLOCK_MONOTONIC, s). Fails on ENDED or ERROR.
            func firstAfterTurn(edgewise: Bool, from before: OrientationMessage?, on watcher: TestClient? = nil, seconds: Double = 10) throws -> Double {
                let reading = watcher ?? client
                let deadline = Date().addingTimeInterval(seconds)
                while true {
                    let line = try reading.next(seconds: max(0.01, deadline.timeIntervalSinceNow))
                    switch try AnyServerMessage(line: Array(line.utf8)) {
                    case .accelerometer(let m) where (abs(m.acceleration.x) > 0.5) == edgewise:
                        return monotonicSeconds()
                    case .orientation(let m) where m.orientation != before?.orientation:
                        return monotonicSeconds()
                    case .ended, .error:
                        throw TestbedError("the watch ended across the sleep: \(line)")
                    default: continue
                    }
                }
            }
        }

        /// In every capture mode, a driver that forgets across the suspend: a client WATCHes (and, polled,
        /// Debian's monitor-sensor holds a claim through the D-Bus drop-in, iio-sensor-proxy's names); at
        /// `PrepareForSleep(true)` the lock is let go within 2 s; the machine "sleeps" (SIGSTOP) while
        /// the driver forgets and the device turns; after `PrepareForSleep(false)` the turn reaches the
        /// same watcher within 1 s, with no new WATCH; the rate is written back (and the events and the
        /// hysteresis where the capture rests on them), and a new lock is taken; monitor-sensor prints the
        /// new orientation, with no new claim, within 1 s.
        @Test(arguments: Capture.allCases) func aDriverThatForgetsAcrossSuspendIsReArmedAndTheWatchGoesOn(capture: Capture) throws {
            // Polled, the D-Bus drop-in serves Debian's monitor-sensor too: a desktop's claim, held across the sleep.
            let machine = try Machine(capture, dbus: capture == .polled)
            let monitor = capture == .polled ? try Peer("/usr/bin/monitor-sensor", bus: machine.bus) : nil
            if let monitor {
                #expect(throws: Never.self, "monitor-sensor: \(monitor.output)") { try waitUntil(seconds: 10) { monitor.output.contains("Has accelerometer") } }
            }
            let recorded = machine.recorded
            try waitUntil(seconds: 10) { machine.logind.locks == 1 }
            #expect(Array(machine.logind.events("Inhibit")[0][2...4]) == ["sleep", "motiond", "delay"])
            var before: OrientationMessage?
            if capture.rests {
                try machine.client.send(#"{"class":"WATCH","streams":["orientation"]}"#)
                before = try machine.client.decode(OrientationMessage.self, try machine.client.next("ORIENTATION", seconds: 10))
                try machine.waitForRest(capture == .motionEvents ? "motion-events" : "hysteresis")
            } else {
                // 25 Hz: a rate none of the drivers starts at, so that writing it back shows.
                try machine.client.send(#"{"class":"WATCH","streams":["accelerometer"],"interval":0.04}"#)
                _ = try machine.client.next("ACCELEROMETER", seconds: 10)
            }
            let set = try machine.attribute(capture.rateAttribute)
            let hysteresis = capture == .hysteresis ? try machine.attribute("in_accel_hysteresis") : nil
            #expect(set != recorded, "motiond set the rate as the driver spells it at start (\(set)): its write-back would not show")

            if let monitor { #expect(!monitor.output.contains("left-up"), "left-up before the turn: \(monitor.output)") }
            let (held, woke) = try machine.sleep(cycle: 1, defaults: capture.defaults(recorded: recorded), edgewise: true)
            let streaming: Double
            do {
                streaming = try machine.firstAfterTurn(edgewise: true, from: before) - woke
            } catch {
                Issue.record("\(error): \(machine.diagnosis())")
                return
            }
            #expect(held < 2, "lock released \(held) s after PrepareForSleep(true)")
            #expect(streaming < 1, "the watcher's first sample \(streaming) s after PrepareForSleep(false)")

            // The bmc150 lying face up read (0, 0, -1000), undefined to iio-sensor-proxy's reading; turned,
            // (1000, 0, 0) through the fixture's matrix (1, 0, 0; 0, -1, 0; 0, 0, 1) is x = +1 g: left-up.
            var monitorFigure = ""
            if let monitor {
                var printed: Double?
                #expect(throws: Never.self, "monitor-sensor after the resume: \(monitor.output)") {
                    try waitUntil(seconds: 10) {
                        if monitor.output.contains("orientation changed: left-up") { printed = monotonicSeconds() }
                        return printed != nil
                    }
                }
                if let printed {
                    #expect(printed - woke < 1, "monitor-sensor printed left-up \(printed - woke) s after PrepareForSleep(false)")
                    monitorFigure = "; monitor-sensor printed left-up within \(printed - woke) s of it"
                }
            }
            try waitUntil(seconds: 10) { machine.logind.locks == 2 }
            let second = machine.logind.events("Inhibit")[1]
            #expect(Array(second[2...4]) == ["sleep", "motiond", "delay"] && (LogindStandIn.time(second) ?? 0) >= woke, "\(second)")
            #expect(machine.logind.released(2) == nil, "the new lock was let go before any sleep")
            var rate = ""
            #expect(throws: Never.self, "\(capture.rateAttribute) not written back: \(rate), was \(set)") {
                try waitUntil(seconds: 10) {
                    rate = (try? machine.attribute(capture.rateAttribute)) ?? ""
                    return rate == set
                }
            }
            switch capture {
            case .buffered:
                let enable = try machine.attribute("buffer/enable")
                #expect(machine.driver?.enabledAfresh != nil && enable == "1", "buffer/enable \(enable)")
            case .motionEvents:
                try machine.waitForRest("motion-events")
                let enables = try ["x", "y", "z"].map { try machine.attribute("events/in_accel_\($0)_roc_either_en") }
                #expect(enables == ["1", "1", "1"], "the events were not enabled again: \(enables)")
            case .hysteresis:
                try machine.waitForRest("hysteresis")
                #expect(try machine.attribute("in_accel_hysteresis") == hysteresis, "the hysteresis was not raised again")
            case .polled:
                break
            }
            let status = try machine.status()
            // The D-Bus drop-in is a client of its own.
            #expect(status.sleeps == 1 && status.clients == (monitor == nil ? 1 : 2), "\(status)")
            print("sleep figures (\(capture.rawValue)): lock released \(held) s after PrepareForSleep(true); the watcher's first sample "
                + "\(streaming) s after PrepareForSleep(false)\(monitorFigure); \(capture.rateAttribute) \(recorded) at the resume, \(rate) written back")
        }

        /// 100 sleeps in a row on one motiond (the issue's count), each with a driver that forgets and a
        /// turn while asleep: each lock let go within 2 s and each turn at the same watcher within 1 s
        /// of its resume; after them no step (HISTORY, from the history.json it started with), no
        /// calibration (STATUS, and calibration.json as the first sleep saved it), no client and no
        /// watch (an orientation watcher saw every turn) is lost; the resident memory is flat and no
        /// descriptor leaked (/proc/PID/status and /proc/PID/fd, proc(5)): a lock, a capture or a
        /// client's state left behind at each sleep would show 100 times over.
        @Test func aHundredSleepsInARowLoseNothingAndLeakNothing() throws {
            let hourAgo = Int64(Date().timeIntervalSince1970 / 60) - 60
            // A gyroscope bias learnt before (SensorFusion.Calibration's fields).
            let calibration = #"{"gyroscopeBias":{"x":0.01,"y":-0.02,"z":0.003},"gyroscopeBiasSigma":0.0002,"magnetometerOffset":{"x":0,"y":0,"z":0},"fieldStrength":50}"#
            let machine = try Machine(
                .buffered, history: #"{"version":1,"totalSteps":141,"minutes":[[\#(hourAgo),141]],"activities":[]}"#, calibration: calibration)
            try waitUntil(seconds: 10) { machine.logind.locks == 1 }
            try machine.client.send(#"{"class":"WATCH","streams":["accelerometer"],"interval":0.04}"#)
            _ = try machine.client.next("ACCELEROMETER", seconds: 10)
            let watcher = try TestClient.greeted(path: machine.daemon.socket)
            try watcher.send(#"{"class":"WATCH","streams":["orientation"]}"#)
            var orientation = try watcher.decode(OrientationMessage.self, try watcher.next("ORIENTATION", seconds: 10)).orientation
            let history = #"{"class":"HISTORY","id":1,"stream":"pedometer","from":\#(Date().timeIntervalSince1970 - 86_400)}"#
            func steps() throws -> Int? {
                try machine.client.send(history)
                return try machine.client.decode(HistoryReply.self, try machine.client.next("HISTORY")).steps
            }
            let before = try machine.status()
            let stepsBefore = try steps()
            let pid = machine.pid
            let (rssBefore, anonBefore) = (ProcessFigures.residentKilobytes(pid) ?? 0, ProcessFigures.anonymousKilobytes(pid) ?? 0)
            let descriptorsBefore = ProcessFigures.descriptors(pid)
            var (held, streaming): ([Double], [Double]) = ([], [])
            var (anonAfterFirst, turnsSeen) = (0, 0)
            var savedAfterFirst = ""
            let began = Date()
            for cycle in 1...100 {
                let edgewise = cycle % 2 == 1
                let (release, woke) = try machine.sleep(cycle: cycle, defaults: ["sampling_frequency": "100"], edgewise: edgewise)
                held.append(release)
                do {
                    streaming.append(try machine.firstAfterTurn(edgewise: edgewise, from: nil) - woke)
                } catch {
                    Issue.record("sleep \(cycle): \(error): \(machine.diagnosis())")
                    return
                }
                try waitUntil(seconds: 10) { machine.logind.locks == cycle + 1 }
                // The log read as it comes (a pipe left full would stop the daemon), and each resume in it.
                #expect(machine.daemon.waitForLog("the machine resumed", count: cycle), "resume \(cycle) not logged")
                // The watcher sees each turn, as it comes.
                while let line = try? watcher.next(seconds: 2) {
                    guard case .orientation(let m) = try AnyServerMessage(line: Array(line.utf8)) else {
                        Issue.record("the orientation watch got \(line)")
                        continue
                    }
                    if m.orientation != orientation { turnsSeen += 1 }
                    orientation = m.orientation
                    break
                }
                if cycle == 1 {
                    anonAfterFirst = ProcessFigures.anonymousKilobytes(pid) ?? 0
                    savedAfterFirst = (try? String(contentsOfFile: machine.state + "/calibration.json", encoding: .utf8)) ?? "none"
                }
            }
            let took = Date().timeIntervalSince(began)
            let after = try machine.status()
            let stepsAfter = try steps()
            let (rssAfter, anonAfter) = (ProcessFigures.residentKilobytes(pid) ?? 0, ProcessFigures.anonymousKilobytes(pid) ?? 0)
            let descriptorsAfter = ProcessFigures.descriptors(pid)
            let savedAfter = (try? String(contentsOfFile: machine.state + "/calibration.json", encoding: .utf8)) ?? "none"

            #expect(held.max() ?? 0 < 2, "a lock was held \(held.max() ?? 0) s after its PrepareForSleep(true)")
            #expect(streaming.max() ?? 0 < 1, "a turn reached the watcher \(streaming.max() ?? 0) s after its PrepareForSleep(false)")
            #expect(stepsBefore == 141 && stepsAfter == 141, "HISTORY's steps: \(String(describing: stepsBefore)) before, \(String(describing: stepsAfter)) after")
            #expect(before.calibration != nil && after.calibration == before.calibration, "calibration \(String(describing: before.calibration)) before, \(String(describing: after.calibration)) after")
            #expect(savedAfter == savedAfterFirst && savedAfter != "none", "calibration.json after the first sleep: \(savedAfterFirst); after the 100th: \(savedAfter)")
            #expect(before.clients == 2 && after.clients == 2, "clients: \(before.clients) before, \(after.clients) after")
            #expect(turnsSeen == 100, "the orientation watcher saw \(turnsSeen) of the 100 turns")
            #expect(after.sleeps == 100, "STATUS sleeps \(String(describing: after.sleeps))")
            #expect(after.recoveries?.first { $0.reason == "resume" }?.count == 100, "\(String(describing: after.recoveries))")
            #expect(machine.logind.released(101) == nil && machine.logind.events("Released").count == 100, "locks: \(machine.logind.peer.output)")
            let opened = Set(descriptorsAfter.values).subtracting(descriptorsBefore.values).sorted()
            #expect(descriptorsAfter.count == descriptorsBefore.count, "descriptors: \(descriptorsBefore.count) before, \(descriptorsAfter.count) after; new: \(opened)")
            // Anonymous memory (heap, stacks) is where a leak grows; 100 sleeps that each leave 2 kB
            // behind would add 200 kB. The first sleep is its own: the sleep path's first use allocates.
            // Measured over 600 sleeps: 3544, 3636, 3636, 3656, 3656, 3660 kB every 100: the allocator
            // settling, not a growth per sleep (streaming 21 s without a sleep: flat at 3560 kB).
            #expect(anonAfter - anonAfterFirst < 200, "RssAnon \(anonAfterFirst) kB after the first sleep, \(anonAfter) kB after the 100th")
            let sorted = (held.sorted(), streaming.sorted())
            print("100 sleeps in \(took) s: lock released \(sorted.0[50]) s (median), \(sorted.0[99]) s (max) after PrepareForSleep(true); "
                + "turn at the watcher \(sorted.1[50]) s (median), \(sorted.1[99]) s (max) after PrepareForSleep(false); "
                + "VmRSS \(rssBefore) -> \(rssAfter) kB, RssAnon \(anonBefore) -> \(anonAfterFirst) (after the first) -> \(anonAfter) kB; "
                + "descriptors \(descriptorsBefore.count) -> \(descriptorsAfter.count); steps \(String(describing: stepsBefore)) -> \(String(describing: stepsAfter))")
        }

        /// A device that stays dead (its buffer never gives a scan again, and its sysfs reads fail, so
        /// the fallback to polling cannot read either): motiond re-arms it with back-off, 0, 1, 2, 4,
        /// 8, 16 … s at most 60 (issue 62's schedule), never in a busy loop, and uses under 1 % of a
        /// core (utime + stime of /proc/PID/stat, proc(5)) over the 30 s after its first re-arm.
        @Test func aDeadDeviceCostsUnderOnePercentOfACoreAndItsReArmsBackOff() throws {
            let machine = try Machine(.buffered)
            try machine.client.send(#"{"class":"WATCH","streams":["accelerometer"],"interval":0.04}"#)
            _ = try machine.client.next("ACCELEROMETER", seconds: 10)
            machine.driver?.stop()
            for axis in ["x", "y", "z"] {
                for kind in ["accel", "anglvel"] { try machine.testbed.breakAttribute("iio:device0", "in_\(kind)_\(axis)_raw") }
            }
            let pid = machine.pid
            #expect(machine.daemon.waitForLog("sensor re-armed", seconds: 10), "no re-arm of the dead device")
            let (cpuFrom, from) = (ProcessFigures.cpuSeconds(pid) ?? 0, monotonicSeconds())
            var seen = [from]
            let window = 30.0
            while monotonicSeconds() - from < window {
                if machine.daemon.waitForLog("sensor re-armed", count: seen.count + 1, seconds: window - (monotonicSeconds() - from)) {
                    seen.append(monotonicSeconds())
                }
            }
            let (cpuTo, to) = (ProcessFigures.cpuSeconds(pid) ?? 0, monotonicSeconds())
            let share = (cpuTo - cpuFrom) / (to - from)
            _ = machine.daemon.secondsToExit(after: SIGTERM)
            let rearms = machine.daemon.finalLog().split(separator: "\n").filter { $0.contains("sensor re-armed") }.map { line in
                let fields = Dictionary(line.split(separator: " ").compactMap { word -> (String, String)? in
                    let pair = word.split(separator: "=", maxSplits: 1)
                    return pair.count == 2 ? (String(pair[0]), String(pair[1])) : nil
                }, uniquingKeysWith: { first, _ in first })
                return (attempt: Int(fields["attempt"] ?? "") ?? 0, delay: Double(fields["reopens_in_s"] ?? "") ?? -1, reason: fields["reason"] ?? "?")
            }
            let schedule = zip(rearms, seen).map { rearm, at in
                "attempt \(rearm.attempt) (\(rearm.reason)) at \(String(format: "%.2f", at - from)) s, reopens in \(rearm.delay) s"
            }
            print("dead device: \(String(format: "%.3f", cpuTo - cpuFrom)) s of CPU in \(String(format: "%.1f", to - from)) s = "
                + "\(String(format: "%.2f", share * 100)) % of a core; re-arms: \(schedule.joined(separator: "; "))")
            #expect(share < 0.01, "\(share * 100) % of a core while the device stayed dead")
            // The schedule: attempt n waits min(60, 2^(n-2)) s, the first none.
            let expected = rearms.indices.map { $0 == 0 ? 0.0 : min(60, pow(2, Double($0 - 1))) }
            #expect(rearms.map(\.attempt) == Array(1...max(1, rearms.count)), "attempts \(rearms.map(\.attempt))")
            #expect(rearms.map(\.delay) == expected, "delays \(rearms.map(\.delay)), expected \(expected)")
            #expect(rearms.count >= 4, "only \(rearms.count) re-arms in \(window) s")
            // Each re-arm waits its back-off at least before the next can come.
            for (index, gap) in zip(seen, seen.dropFirst()).map({ $1 - $0 }).enumerated() where index < rearms.count {
                #expect(gap >= rearms[index].delay - 0.05, "re-arm \(index + 2) came \(gap) s after the one that said it reopens in \(rearms[index].delay) s")
            }
        }
    }
}
