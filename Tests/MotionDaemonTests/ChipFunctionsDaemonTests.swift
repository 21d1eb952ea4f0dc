import Foundation
import MotionWire
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The chip's own functions in the daemon, tested at the kernel's interface. The pedometer's fixture
/// is a bma400 as its driver registers it (`wrist-bma400-steps`: `in_steps_input` and `in_steps_en` sysfs-only,
/// drivers/iio/accel/bma400_core.c:402–409, Linux 6.12; the count 24 bits, `bma400_get_steps_reg`,
/// :797–812; the step event `events/in_steps_change_en`, :213–217, pushed as
/// `IIO_MOD_EVENT_CODE(IIO_STEPS, 0, IIO_NO_MOD, IIO_EV_TYPE_CHANGE, IIO_EV_DIR_NONE)`,
/// `bma400_interrupt` :1666–1686). The test is the chip: it sets the count and pushes the step event
/// through a FIFO handed over by umockdev's ioctl handler, as the motion-event tests do. The
/// significant motion's is a Chromebook's ChromeOS EC activity sensor (`chromebook-cros-ec-activity`).
extension Hardware {
    @Suite struct ChipFunctionsInTheDaemon {
        /// The step event's code: CHANGE (5) << 56 | NONE (3) << 48 | IIO_STEPS (20) << 32
        /// (include/uapi/linux/iio/types.h:35, :117, :127; include/linux/iio/events.h:24–28).
        static let stepEventCode: UInt64 = 5 << 56 | 3 << 48 | 20 << 32

        /// The significant-motion event of cros_ec_activity (`cros_ec_activity_push_data`):
        /// `IIO_UNMOD_EVENT_CODE(IIO_ACTIVITY, 0, IIO_EV_TYPE_CHANGE, IIO_EV_DIR_FALLING)`, CHANGE (5) << 56 |
        /// FALLING (2) << 48 | IIO_ACTIVITY (19) << 32, channel 0 (include/uapi/linux/iio/types.h:34, :117, :126).
        static let significantMotionCode: UInt64 = 5 << 56 | 2 << 48 | 19 << 32

        /// A chip's device (`fixture`) and a daemon on a state directory that outlives it, its event
        /// descriptors played by an `IIOEventFeed` (a new one at each ioctl: the chip's watch is opened
        /// again when its interval changes, and the first descriptor closes with it).
        final class ChipMachine {
            let testbed: Testbed
            let events: IIOEventFeed
            let directory: String
            private(set) var daemon: DaemonProcess
            private(set) var client: TestClient

            init(fixture: String = "wrist-bma400-steps") throws {
                testbed = try Testbed()
                try testbed.add(fixture: fixture)
                directory = NSTemporaryDirectory() + "motiond-chip-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                events = try IIOEventFeed(testbed: testbed, directory: directory)
                (daemon, client) = try Self.start(directory: directory, events: events)
            }

            static func start(directory: String, events: IIOEventFeed) throws -> (DaemonProcess, TestClient) {
                let daemon = try DaemonProcess(socket: temporarySocketPath(), arguments: ["--state-directory", directory], inheriting: events.fifos)
                try events.openWriters()
                let client = try TestClient(path: daemon.socket)
                _ = try client.next("VERSION")
                return (daemon, client)
            }

            deinit { daemon.signal(SIGTERM) }

            /// The chip counted: its count is now `count`, and it says so with a step event.
            func step(to count: Int) throws {
                try testbed.setAttribute("iio:device0", "in_steps_input", "\(count)\n")
                try push(ChipFunctionsInTheDaemon.stepEventCode)
            }

            /// Pushes the event of `code` into the descriptors the daemon reads; none reading is an error.
            func push(_ code: UInt64) throws {
                guard events.push(code) > 0 else { throw TestbedError("no event descriptor is read; motiond logged: \(daemon.logSoFar)") }
            }

            /// Stops the daemon (its history saved at stop), then starts another on the same state.
            func restart(whileStopped: () throws -> Void) throws {
                daemon.signal(SIGTERM)
                events.closeWriters()
                try whileStopped()
                (daemon, client) = try Self.start(directory: directory, events: events)
            }

            func watchPedometer() throws -> PedometerMessage {
                try client.send(#"{"class":"WATCH","streams":["pedometer"],"interval":1}"#)
                _ = try client.next("WATCHING")
                return try nextPedometer()
            }

            func nextPedometer(seconds: Double = 5) throws -> PedometerMessage {
                try client.decode(PedometerMessage.self, try client.next("PEDOMETER", seconds: seconds))
            }

            func historySteps() throws -> Int? {
                try client.send(#"{"class":"HISTORY","stream":"pedometer","from":0}"#)
                return try client.decode(HistoryReply.self, try client.next("HISTORY")).steps
            }
        }

        /// The count from the chip through its wrap at 2^24, a reset and a restart: PEDOMETER and
        /// HISTORY count what the chip counted, the accelerometer is never opened for it, and the
        /// counter is left counting at stop.
        @Test func theChipsCountSurvivesItsWrapAResetAndARestart() throws {
            let wrist = try ChipMachine()
            #expect(try wrist.watchPedometer().steps == 0, "a fresh history")
            // The first read is the base: the fixture's 16,777,210 were counted before the daemon knew.
            try wrist.step(to: 16_777_215)
            #expect(try wrist.nextPedometer().steps == 5)
            #expect(try wrist.testbed.attribute("iio:device0", "in_steps_en") == "1\n", "the counter enabled")
            // 1 step to the top (2^24 = 16,777,216), then 3 more.
            try wrist.step(to: 3)
            let wrapped = try wrist.nextPedometer()
            #expect(wrapped.steps == 9, "\(wrapped)")
            // Reset (the chip lost power): its 2 are new steps.
            try wrist.testbed.setAttribute("iio:device0", "in_steps_input", "0\n")
            try wrist.step(to: 2)
            #expect(try wrist.nextPedometer().steps == 11)
            #expect(try wrist.testbed.attribute("iio:device0", "buffer/enable") == "0\n", "the accelerometer is not opened for the steps")
            // The chip counts 20 more while the daemon is stopped.
            try wrist.restart { try wrist.testbed.setAttribute("iio:device0", "in_steps_input", "22\n") }
            #expect(try wrist.testbed.attribute("iio:device0", "in_steps_en") == "1\n", "left counting at stop")
            let after = try wrist.watchPedometer()
            let total = after.steps == 31 ? after.steps : try wrist.nextPedometer().steps
            #expect(total == 31, "11 before, 20 while stopped")
            #expect(try wrist.historySteps() == 31)
        }
    }
}

extension Hardware.ChipFunctionsInTheDaemon {
    /// Android's one-shot significant motion from the ChromeOS EC: the chip's event is enabled only
    /// while a client is armed (`events/in_activity_still_change_falling_en`, `cros_ec_activity_single_shot`),
    /// each arming gets one SIGNIFICANT_MOTION, a second event before the client arms again sends it
    /// nothing, and the chip is disarmed when no one is armed.
    @Test func significantMotionFiresOncePerArmingAndTheChipIsArmedOnlyWhileWatched() throws {
        let chromebook = try ChipMachine(fixture: "chromebook-cros-ec-activity")
        let enable = "events/in_activity_still_change_falling_en"
        func armed() -> Bool { (try? chromebook.testbed.attribute("iio:device0", enable)) == "1\n" }
        #expect(!armed(), "unwatched, the chip is not armed")
        for arming in 1...2 {
            try chromebook.client.send(#"{"class":"WATCH","streams":["significant_motion"]}"#)
            _ = try chromebook.client.next("WATCHING")
            try waitUntil(seconds: 5) { armed() }
            try chromebook.push(Self.significantMotionCode)
            let fired = try chromebook.client.decode(SignificantMotionMessage.self, try chromebook.client.next("SIGNIFICANT_MOTION"))
            #expect(fired.source == .significantMotion, "arming \(arming)")
            try waitUntil(seconds: 5) { !armed() }
            // The chip's second event (a real EC, disarmed, sends none): the client is not armed.
            _ = try? chromebook.push(Self.significantMotionCode)
            #expect(throws: (any Error).self, "arming \(arming): one event per arming") {
                try chromebook.client.next("SIGNIFICANT_MOTION", seconds: 1)
            }
        }
    }
}
