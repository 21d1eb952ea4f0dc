import Foundation
import MotionWire
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A laptop's HID sensor hub accelerometer read through its buffer (hid-sensor-accel-3d: 16-bit
/// values in 32-bit storage, its soft timestamp at index 3; the hub's trigger `accel_3d-dev0`), with
/// a fake hub behind the device node that sends a report every 100 ms, as a hub set to report every
/// period does, and, where it honours its change sensitivity, only reports that moved past it
/// (rotation-and-posture.md: Microsoft's sensor rules; whether a hub does under Linux is measured).
extension Hardware {
    @Suite struct HysteresisRest {
        /// A hub: writes the current value to the device node every 100 ms, skipping repeats while
        /// its hysteresis attribute is above 0 if it `honours` it.
        final class Hub: @unchecked Sendable {
            // @unchecked: `value` and `running` are behind their mutexes; the rest is set once.
            let testbed: Testbed
            let honours: Bool
            private let value = Mutex<[Int32]>([0, 0, -1000])
            private let running = Mutex(true)
            private var thread: Thread?

            init(testbed: Testbed, honours: Bool) {
                self.testbed = testbed
                self.honours = honours
                // The thread reads the attribute's file and writes the node's controlling end directly.
                let sensitivityFile = testbed.root + "/sys/bus/iio/devices/iio:device0/in_accel_hysteresis"
                let node = testbed.controlDescriptor(for: "/dev/iio:device0")
                thread = Thread { [self] in
                    var lastSent: [Int32] = []
                    while running.withLock({ $0 }) {
                        let now = value.withLock { $0 }
                        let text = (try? String(contentsOfFile: sensitivityFile, encoding: .utf8)) ?? "0"
                        let sensitivity = Double(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
                        if !(honours && sensitivity > 0 && now == lastSent) {
                            var scan: [UInt8] = []
                            for v in now { scan += withUnsafeBytes(of: v.littleEndian, Array.init) }
                            scan += [0, 0, 0, 0] + withUnsafeBytes(of: Int64(Date().timeIntervalSince1970 * 1e9).littleEndian, Array.init)
                            _ = scan.withUnsafeBytes { write(node, $0.baseAddress, $0.count) }
                            lastSent = now
                        }
                        usleep(100_000)
                    }
                }
                thread?.start()
            }

            /// Sets what the hub measures (raw counts, 1000 = 1 g).
            func measure(_ counts: [Int32]) { value.withLock { $0 = counts } }

            func stop() { running.withLock { $0 = false } }

            deinit { stop() }
        }

        static func start(honours: Bool) throws -> (Testbed, Hub, DaemonProcess, TestClient) {
            let testbed = try Testbed()
            try testbed.add(fixture: "laptop-hid-buffered-accelerometer")
            let hub = Hub(testbed: testbed, honours: honours)
            let state = NSTemporaryDirectory() + "motiond-hub-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            let daemon = try DaemonProcess(socket: temporarySocketPath(), arguments: ["--state-directory", state])
            let client = try TestClient(path: daemon.socket)
            _ = try client.next("VERSION")
            try client.send(#"{"class":"WATCH","streams":["orientation"]}"#)
            _ = try client.next("WATCHING")
            return (testbed, hub, daemon, client)
        }

        static func waitForRest(_ mode: String, client: TestClient) throws -> StatusReply.Sensor {
            var sensor: StatusReply.Sensor?
            try waitUntil(seconds: 10) {
                guard (try? client.send(#"{"class":"STATUS"}"#)) != nil, let line = try? client.next("STATUS") else { return false }
                sensor = (try? client.decode(StatusReply.self, line))?.sensors.first
                return sensor?.rest == mode
            }
            return try #require(sensor)
        }

        /// A hub that honours its hysteresis: once raised to 0.02 g (0.196133 m/s²) the buffer falls
        /// silent at rest and the capture rests on it; a turn sends reports again and is reported.
        /// The hysteresis is put back at stop.
        @Test func aHubThatHonoursItsHysteresisIsLeftToReportOnlyChanges() throws {
            let (testbed, hub, daemon, client) = try Self.start(honours: true)
            defer { hub.stop() }
            let before = try client.decode(OrientationMessage.self, try client.next("ORIENTATION"))
            let sensor = try Self.waitForRest("hysteresis", client: client)
            #expect(sensor.mode == "buffered" && sensor.restNote == nil, "\(sensor)")
            #expect(try testbed.attribute("iio:device0", "in_accel_hysteresis") == "0.196133\n")
            hub.measure([1000, 0, 0])  // onto its edge
            let after = try client.decode(OrientationMessage.self, try client.next("ORIENTATION", seconds: 3))
            #expect(after.orientation != before.orientation)
            daemon.signal(SIGTERM)
            #expect(try testbed.attribute("iio:device0", "in_accel_hysteresis") == "0\n")
        }

        /// A hub that goes on reporting every period with its hysteresis raised ignores it: the
        /// daemon says so with both rates, puts it back to 0, and polls the accelerometer instead.
        @Test func aHubThatIgnoresItsHysteresisIsPolledAndToldWhy() throws {
            let (testbed, hub, daemon, client) = try Self.start(honours: false)
            defer { hub.stop() }
            _ = try client.next("ORIENTATION")
            let sensor = try Self.waitForRest("adaptive-polling", client: client)
            #expect(sensor.mode == "polled", "\(sensor)")
            #expect(sensor.restNote?.contains("the sensor hub ignores its hysteresis") == true, "\(String(describing: sensor.restNote))")
            #expect(try testbed.attribute("iio:device0", "in_accel_hysteresis") == "0\n")
            #expect(daemon.waitForLog("ignores its hysteresis"))
        }
    }
}
