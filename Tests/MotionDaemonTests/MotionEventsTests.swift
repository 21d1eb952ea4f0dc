import Foundation
import MotionWire
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// An accelerometer with motion events, tested at the kernel's interface: the fixture is a tablet's
/// bma250e as bmc150-accel registers it with its interrupt wired (a buffer of 10-bit samples,
/// `BMC150_ACCEL_CHANNEL`'s `le:s10/16>>6`), and names its event attributes as the driver does (`bmc150_accel_event`: `IIO_EV_TYPE_ROC`, `IIO_EV_DIR_EITHER`,
/// value, enable and period separate per axis: `events/in_accel_x_roc_either_en`, …), the test answers
/// the daemon's `IIO_GET_EVENT_FD_IOCTL` on `/dev/iio:device0` with the number of a FIFO the daemon
/// inherited (umockdev cannot hand a descriptor over: rotation-and-posture.md), and writes the 16-byte
/// `iio_event_data` records the driver's interrupt handler pushes into it.
extension Hardware {
    @Suite struct MotionEventsCapture {
        /// `_IOR('i', 0x90, int)` (include/uapi/linux/iio/events.h).
        static let getEventDescriptor: UInt = 0x8004_6990
        /// The descriptor number the daemon is handed for its events.
        static let eventDescriptor: Int32 = 50

        /// What bmc150_accel_handle_roc_event pushes for a move along x: `IIO_MOD_EVENT_CODE(IIO_ACCEL,
        /// 0, IIO_MOD_X, IIO_EV_TYPE_ROC, rising or falling by the sign bit)`, which is
        /// `type << 56 | direction << 48 | modifier << 40 | chan_type << 32` (include/linux/iio/events.h;
        /// IIO_EV_TYPE_ROC = 2, IIO_EV_DIR_RISING = 1 / FALLING = 2, IIO_MOD_X = 1, IIO_ACCEL = 3), then
        /// the timestamp, host order.
        static func rateOfChangeEvent(rising: Bool, at timestamp: Int64) -> [UInt8] {
            let id = UInt64(2) << 56 | UInt64(rising ? 1 : 2) << 48 | UInt64(1) << 40 | UInt64(3) << 32
            return withUnsafeBytes(of: id, Array.init) + withUnsafeBytes(of: timestamp, Array.init)
        }

        /// motiond on the bmc150 tablet, its events' ioctl answered by `answer`, with a client.
        final class Tablet {
            let testbed: Testbed
            let handler: IoctlHandler
            let fifo: String
            let daemon: DaemonProcess
            let client: TestClient
            /// The FIFO's write end: what the driver pushes.
            private(set) var events: Int32 = -1

            init(arguments: [String] = [], answer: @escaping @Sendable (UInt) -> IoctlHandler.Answer) throws {
                testbed = try Testbed()
                try testbed.add(fixture: "tablet-motion-events")
                handler = try testbed.handleIoctls(on: "/dev/iio:device0", answer: answer)
                let directory = NSTemporaryDirectory() + "motiond-events-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                fifo = directory + "/events"
                guard mkfifo(fifo, 0o600) == 0 else { throw TestbedError("mkfifo: errno \(errno)") }
                daemon = try DaemonProcess(
                    socket: temporarySocketPath(), arguments: ["--state-directory", directory] + arguments,
                    inheriting: [MotionEventsCapture.eventDescriptor: fifo])
                // The daemon holds the FIFO open for reading and writing: this open does not wait.
                events = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
                guard events >= 0 else { throw TestbedError("open \(fifo): errno \(errno)") }
                client = try TestClient(path: daemon.socket)
                _ = try client.next("VERSION")
            }

            deinit {
                daemon.signal(SIGTERM)
                close(events)
            }

            /// Pushes one event, as the driver's interrupt handler does.
            func push(_ record: [UInt8]) throws {
                guard write(events, record, record.count) == record.count else { throw TestbedError("write to the event FIFO: errno \(errno)") }
            }

            /// Watches the orientation; returns the first.
            func watchOrientation() throws -> OrientationMessage {
                try client.send(#"{"class":"WATCH","streams":["orientation"]}"#)
                _ = try client.next("WATCHING")
                return try client.decode(OrientationMessage.self, try client.next("ORIENTATION"))
            }

            /// The accelerometer's capture as STATUS tells it, once `rest` is `mode`.
            func waitForRest(_ mode: String, seconds: Double = 5) throws -> StatusReply.Sensor {
                var sensor: StatusReply.Sensor?
                try waitUntil(seconds: seconds) {
                    guard (try? client.send(#"{"class":"STATUS"}"#)) != nil, let line = try? client.next("STATUS") else { return false }
                    sensor = (try? client.decode(StatusReply.self, line))?.sensors.first
                    return sensor?.rest == mode
                }
                return try #require(sensor)
            }

            /// Turns the tablet from face up onto its edge: gravity (256 counts, 1 g) moves from the
            /// chip's z to its x.
            func turnOntoItsEdge() throws {
                try testbed.setAttribute("iio:device0", "in_accel_x_raw", "256\n")
                try testbed.setAttribute("iio:device0", "in_accel_z_raw", "0\n")
            }

            func enableAttributes() throws -> [String] {
                try ["x", "y", "z"].map { try testbed.attribute("iio:device0", "events/in_accel_\($0)_roc_either_en").trimmingCharacters(in: .whitespacesAndNewlines) }
            }
        }

        /// With its events working, the accelerometer is not read while it lies still (polled, it
        /// was read 1.25 times a second; buffered, it woke the daemon 5 times a second), a turn without an event goes unseen, and the event that comes with
        /// the turn has it reported at once. The events are enabled while it rests and disabled at stop.
        @Test func anAccelerometerWithMotionEventsSleepsUntilItsChipSaysItMoved() throws {
            let tablet = try Tablet { $0 == MotionEventsCapture.getEventDescriptor ? .integer(MotionEventsCapture.eventDescriptor) : .failure(ENOTTY) }
            try tablet.client.send(#"{"class":"DEVICES"}"#)
            #expect(try tablet.client.decode(DevicesReply.self, try tablet.client.next("DEVICES")).devices.first?.mode == "buffered")
            let before = try tablet.watchOrientation()
            let sensor = try tablet.waitForRest("motion-events")
            // Read through sysfs though it has a buffer: the buffer would wake the daemon at its slowest rate.
            #expect(sensor.mode == "polled" && sensor.restNote == nil, "\(sensor)")
            #expect(try tablet.testbed.attribute("iio:device0", "buffer/enable") == "0\n")
            #expect(try tablet.enableAttributes() == ["1", "1", "1"])
            #expect(tablet.handler.requests.contains(MotionEventsCapture.getEventDescriptor))
            // At rest: at most the one read that slows the timer to the heartbeat; polling would make 3 or 4.
            #expect(try tablet.testbed.reads(of: "in_accel_x_raw", on: "iio:device0", during: 3) <= 1)
            try tablet.turnOntoItsEdge()
            #expect(throws: (any Error).self, "a turn with no event is not seen before the heartbeat") {
                try tablet.client.next("ORIENTATION", seconds: 1.5)
            }
            let pushed = Date()
            try tablet.push(MotionEventsCapture.rateOfChangeEvent(rising: true, at: 1_700_000_000_000_000_000))
            let after = try tablet.client.decode(OrientationMessage.self, try tablet.client.next("ORIENTATION", seconds: 2))
            #expect(after.orientation != before.orientation, "\(before.orientation) → \(after.orientation)")
            #expect(Date().timeIntervalSince(pushed) < 0.5)
            tablet.daemon.signal(SIGTERM)
            #expect(try tablet.enableAttributes() == ["0", "0", "0"])
        }

        /// Motion events as a bma250e sends them while it moves (bmc150-accel's slowest rate, 15.6 a
        /// second: one per sample beyond the slope threshold), at its fastest 125, and a storm of
        /// 100,000 a second: each event only brings the next read forward when none is due sooner, so
        /// the accelerometer is read at the moving rate (`CapturePlan.eventRate`, 4 a second) plus at
        /// most one. Each read is three I²C transfers on hardware; every event read it at once before
        /// (19.7, 104 and 1,557 reads a second).
        @Test(arguments: [15.6, 125, 100_000])
        func motionEventsAddNoReadsBeyondTheMovingRate(eventsPerSecond: Double) throws {
            let tablet = try Tablet { $0 == MotionEventsCapture.getEventDescriptor ? .integer(MotionEventsCapture.eventDescriptor) : .failure(ENOTTY) }
            _ = try tablet.watchOrientation()
            _ = try tablet.waitForRest("motion-events")
            let seconds = 3.0
            let reads = try Self.duringEvents(to: tablet.events, perSecond: eventsPerSecond) {
                try tablet.testbed.reads(of: "in_accel_x_raw", on: "iio:device0", during: seconds)
            }
            let movingRate = 4.0
            #expect(Double(reads) / seconds <= movingRate + 1, "\(reads) reads in \(seconds) s at \(eventsPerSecond) events/s")
            // Starved reads (events that keep putting the next read off) give 0 or 1; half the moving
            // rate leaves room for a loop and a writing thread sharing 2 busy cores with other tests.
            #expect(Double(reads) / seconds >= movingRate / 2, "still read at the moving rate: \(reads) in \(seconds) s")
        }

        /// Runs `body` while a thread of its own writes `perSecond` motion events a second to `fifo`:
        /// those due each millisecond together, as an interrupt handler pushes them; what a full FIFO
        /// does not take is dropped, as the kernel's event queue drops what its reader leaves.
        static func duringEvents<T>(to fifo: Int32, perSecond: Double, _ body: () throws -> T) throws -> T {
            let stop = Atomic<Bool>(false)
            let ended = DispatchSemaphore(value: 0)
            Thread {
                let start = Date()
                var pushed = 0
                while !stop.load(ordering: .relaxed) {
                    let due = Int(Date().timeIntervalSince(start) * perSecond) + 1
                    if due > pushed {
                        // At most PIPE_BUF (4096 bytes, 256 records): a write that size is whole or refused, never a part record.
                        let records = (0..<min(due - pushed, 256)).flatMap { _ in rateOfChangeEvent(rising: true, at: 1_700_000_000_000_000_000) }
                        _ = records.withUnsafeBytes { write(fifo, $0.baseAddress, $0.count) }
                        pushed = due
                    }
                    usleep(1000)
                }
                ended.signal()
            }.start()
            defer {
                stop.store(true, ordering: .relaxed)
                ended.wait()
            }
            return try body()
        }

        /// An interrupt line that is not wired: the attributes take `1` and no event ever comes. The
        /// first heartbeat read after a move finds it moved, the daemon says why it gives the events
        /// up, disables them, and polls: the turn is reported then, not never. STATUS, the journal and
        /// the metrics each say which way it rests, before and after.
        @Test func eventsThatNeverComeAreGivenUpAtTheFirstHeartbeatAfterAMove() throws {
            let port = try freeLoopbackPort()
            let tablet = try Tablet(arguments: ["--motion-event-heartbeat", "1", "--metrics", "127.0.0.1:\(port)"]) {
                $0 == MotionEventsCapture.getEventDescriptor ? .integer(MotionEventsCapture.eventDescriptor) : .failure(ENOTTY)
            }
            let before = try tablet.watchOrientation()
            _ = try tablet.waitForRest("motion-events")
            // The metrics part starts after the socket's (MotionServer's start order): a client can see the
            // rest before the port listens.
            try waitUntil(seconds: 10) { (try? httpRequest(port: port, path: "/metrics")) != nil }
            let resting = prometheusSamples(try httpRequest(port: port, path: "/metrics").body)
            #expect(resting[Self.restSeries("motion-events")] == 1 && resting[Self.restSeries("adaptive-polling")] == 0, "\(resting)")
            try tablet.turnOntoItsEdge()
            let after = try tablet.client.decode(OrientationMessage.self, try tablet.client.next("ORIENTATION", seconds: 3))
            #expect(after.orientation != before.orientation)
            let sensor = try tablet.waitForRest("adaptive-polling")
            #expect(sensor.restNote?.contains("no motion event has come") == true, "\(String(describing: sensor.restNote))")
            #expect(try tablet.enableAttributes() == ["0", "0", "0"])
            #expect(tablet.daemon.waitForLog("woken by adaptive-polling"))
            let demoted = prometheusSamples(try httpRequest(port: port, path: "/metrics").body)
            #expect(demoted[Self.restSeries("motion-events")] == 0 && demoted[Self.restSeries("adaptive-polling")] == 1, "\(demoted)")
        }

        static func restSeries(_ mode: String) -> String { #"motiond_sensor_rest_mode{device="iio:device0",mode="\#(mode)"}"# }

        /// `EBUSY` (another process, iio-sensor-proxy's successor or a second motiond, holds the
        /// device's events) and `ENODEV` (no event interface, iio_device_register_eventset): the
        /// daemon says so, puts the attributes back, and polls; a turn is still reported.
        @Test(arguments: [(EBUSY, "EBUSY"), (ENODEV, "ENODEV")])
        func refusedEventsAreToldAndTheAccelerometerIsPolled(code: Int32, name: String) throws {
            let tablet = try Tablet { _ in .failure(code) }
            let before = try tablet.watchOrientation()
            let sensor = try tablet.waitForRest("adaptive-polling")
            #expect(sensor.restNote?.contains("IIO_GET_EVENT_FD_IOCTL failed (\(name)") == true, "\(String(describing: sensor.restNote))")
            #expect(try tablet.enableAttributes() == ["0", "0", "0"])
            try tablet.turnOntoItsEdge()
            let after = try tablet.client.decode(OrientationMessage.self, try tablet.client.next("ORIENTATION", seconds: 3))
            #expect(after.orientation != before.orientation)
        }
    }
}
