import Foundation
import Synchronization
import MotionCore
import MotionWire
import TestSupport
import Testing

@testable import MotionConfiguration
@testable import MotionDaemon

/// Another machine's sensors through libiio's network backend: Debian's `iiod` serves a umockdev
/// machine (under umockdev-run, `ChildTestbed`), and a motiond that sees no local devices (no
/// preload) fuses them. Moved from `Hardware.NetworkSensors` (issue 61): the test process makes no
/// testbed, so the suite runs beside `Hardware`.
@Suite(.onOwnThreads) struct NetworkSensors {
    /// `iiod -p port` on `machine` under umockdev-run (iiod dies with it), with `writer` beside it;
    /// killed when released.
    final class IIOD {
        let process = Process()
        let port: Int

        init(on machine: ChildTestbed, writer: AttributeWriter? = nil) throws {
            port = try freeLoopbackPort()
            let (executable, arguments) = try machine.command("/usr/sbin/iiod", ["-p", "\(port)"], writer: writer)
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.runWithSteadyEnvironment()
            try waitUntil { MosquittoBroker.accepts(port: port) }
        }

        func kill() {
            Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilEnded(seconds: 5)
        }

        deinit { kill() }
    }

    /// The devices once the remote's are listed: off the start path, they appear a moment after it.
    static func remoteDevices(_ client: TestClient) throws -> [DevicesReply.Device] {
        var devices: [DevicesReply.Device] = []
        try waitUntil(seconds: 10) {
            try? client.send(#"{"class":"DEVICES"}"#)
            devices = (try? client.decode(DevicesReply.self, try client.next("DEVICES")).devices) ?? []
            if devices.isEmpty { usleep(50_000) }  // the asking's pace, inside the wait
            return !devices.isEmpty
        }
        return devices
    }

    /// The tablet of `MachineClass.tabletWithAnAccelerometerAndAMagnetometerGetsItsCompassHeading`,
    /// lying face up with its top edge pointing east, read over the network: the same expectations
    /// (heading 90°, gravity (0, 0, −1) g, field (−19, 0, −46) µT, worked out there from the Earth's
    /// field and Linux userspace's frame). Moved from `Hardware.NetworkSensors` (issue 61): iiod
    /// runs under umockdev-run on the fixture, which nothing changes.
    @Test func aTabletServedByIIODIsFusedByAMotiondElsewhere() throws {
        let iiod = try IIOD(on: ChildTestbed(fixture: "tablet-accelerometer-magnetometer"))
        let daemon = try NetworkBoards.daemon(port: iiod.port)
        defer { daemon.signal(SIGTERM) }
        let client = try TestClient(path: daemon.socket)
        _ = try client.next("VERSION")

        let devices = try Self.remoteDevices(client)
        #expect(devices.map(\.device) == ["iio:device10000", "iio:device10001"], "the remote's iio:device0 and 1, numbered apart from local ones")
        #expect(devices.map(\.name) == ["KIOX000A:00", "ak09911"])
        #expect(devices.allSatisfy { $0.mode == "network" })

        try client.send(#"{"class":"WATCH","streams":["motion"],"interval":0.1,"frame":"xMagneticNorthZVertical"}"#)
        _ = try client.next("WATCHING")
        var motion: MotionMessage?
        // The magnetometer's calibration starts from nothing: the heading settles within a few samples.
        for _ in 0..<20 {
            motion = try client.decode(MotionMessage.self, try client.next("MOTION"))
            if let heading = motion?.heading, abs(heading - 90) < 1 { break }
        }
        let last = try #require(motion)
        #expect(abs((last.heading ?? 0) - 90) < 1, "heading \(String(describing: last.heading))°")
        #expect((last.gravity - Vector3(x: 0, y: 0, z: -1)).length < 0.005, "\(last.gravity)")
        #expect((last.magneticField.field - Vector3(x: -19, y: 0, z: -46)).length < 0.5, "\(last.magneticField.field)")
        #expect(last.unavailable == [.rotationRate])

        // The board goes away: the stream ends with its reason; the daemon goes on.
        iiod.kill()
        let ended = try client.decode(Ended.self, try client.next("ENDED", seconds: 15))
        #expect(ended.stream == .motion, "\(ended)")
        try client.send(#"{"class":"STATUS"}"#)
        #expect(try client.decode(StatusReply.self, try client.next("STATUS")).sensors.isEmpty)
    }

    /// An IMU whose buffer iiod streams is read through it, not polled: the fed x of 1000 counts is
    /// in no attribute (the fixture's in_accel_x_raw is 0), and the samples come at the fed rate.
    /// Expected values: counts × in_accel_scale (0.000598 m/s²) ÷ g. The fixture has no mount matrix,
    /// so the chip's axes are Linux userspace's, turned by half a turn about z into the device frame
    /// (iio-sensor-proxy negates x and y; docs/frames.md); CoreMotion's sign then negates the specific
    /// force (a device at rest face up reads z = −1 g; design.md): x = +1000 counts' worth, z = −1 g.
    /// Moved from `Hardware.NetworkSensors` (issue 61): the scans (x, y, z: le:s16, the imu-buffered
    /// fixture's scan elements 0–2, as motiond enables them for the accelerometer alone, without the
    /// timestamp) are what the buffer's node gives, one every 10 ms once iiod opens it, for longer
    /// than the test runs (the test process fed them at 100 Hz while the buffer was enabled); the
    /// buffer's enable is read through the shell beside iiod.
    @Test func aRemoteIMUsBufferIsStreamedNotPolled() throws {
        let scan = [Int16(1000), 0, 16384].flatMap { withUnsafeBytes(of: $0.littleEndian, Array.init) }
        let machine = try ChildTestbed(fixture: "imu-buffered", reads: ["/dev/iio:device0": Array(repeating: (10, scan), count: 6000)])
        let testbed = try AttributeWriter()
        let iiod = try IIOD(on: machine, writer: testbed)
        let daemon = try NetworkBoards.daemon(port: iiod.port)
        defer { daemon.signal(SIGTERM) }
        let client = try TestClient(path: daemon.socket)
        _ = try client.next("VERSION")
        _ = try Self.remoteDevices(client)
        try client.send(#"{"class":"WATCH","streams":["accelerometer"],"interval":0.01}"#)
        _ = try client.next("WATCHING")
        var samples: [AccelerometerMessage] = []
        while samples.count < 100 {
            samples.append(try client.decode(AccelerometerMessage.self, try client.next("ACCELEROMETER")))
        }
        #expect(try testbed.attribute("iio:device0", "buffer/enable").hasPrefix("1"), "iiod enabled the remote buffer")
        let expected = Vector3(x: 1000 * 0.000598 / 9.80665, y: 0, z: -16384 * 0.000598 / 9.80665)
        let last = try #require(samples.last)
        #expect((last.acceleration - expected).length < 1e-4, "\(last.acceleration), expected \(expected)")
        // Stamped on arrival here: 99 intervals of the fed 10 ms, give or take the feeder's sleeps.
        let span = Double(last.timestamp - samples[0].timestamp) * 1e-9
        #expect(span > 0.8 && span < 1.6, "\(span) s for 100 samples at 100 Hz")

        // The board goes away mid-stream: the refill fails, the stream ends with its reason.
        iiod.kill()
        let ended = try client.decode(Ended.self, try client.next("ENDED", seconds: 15))
        #expect(ended.stream == .accelerometer, "\(ended)")
    }
}

/// motiond against libiio network boards that misbehave on purpose (issue 25, defects 2, 6 and 9),
/// played by a scripted listener. The daemon runs without umockdev (it sees no local devices) and the
/// test makes no testbed, so these run beside the `Hardware` suite; their waits for the daemon run
/// on threads of their own.
@Suite(.onOwnThreads) struct NetworkBoards {
    /// A motiond outside the testbed whose only sensors are iiod's on `port`.
    static func daemon(port: Int) throws -> DaemonProcess {
        let path = NSTemporaryDirectory() + "motiond-network-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).conf"
        try "network_sensors: [\"ip:127.0.0.1:\(port)\"]\n".write(toFile: path, atomically: true, encoding: .utf8)
        let state = NSTemporaryDirectory() + "motiond-state-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        return try DaemonProcess(
            socket: temporarySocketPath(), arguments: ["--config", path, "--state-directory", state],
            environment: ["LD_PRELOAD": "", "UMOCKDEV_DIR": ""])
    }

    // Issue 25, defects 2, 6 and 9: boards that misbehave on purpose, played by a scripted listener.

    /// Seconds within which the socket listens though a board holds its listing: under the board's 5 s
    /// time limit, so a start that waited for the board fails. Not 2 s: a CI run of the full suite on two
    /// cores, every suite starting at once, saw an unheld start take 2.65-3.43 s of waiting for a CPU.
    static let startBound = 4.5
    /// Seconds within which the socket listens though a board drips its description: a start that
    /// waited for it would wait as long as the drip (a million bytes at two a second, libiio's timeout
    /// being per read), so any bound tells the two apart; not `startBound`, which full CI runs of this
    /// stop exceeded with an unheld start (5.67-6.49 s waiting for a CPU).
    static let dripBound = 20.0

    /// The daemon started and listening: how long its socket took, s.
    static func startTimed(port: Int) throws -> (DaemonProcess, Double) {
        let started = Date()
        let daemon = try Self.daemon(port: port)
        return (daemon, Date().timeIntervalSince(started))
    }

    /// Defect 2: libiio's timeout is per read, and the listing ran before the socket was bound, so a
    /// board that drips its description held start-up for ever, and SIGTERM with it. The board here
    /// answers the fetches before `firstDripped` at once and drips the others: from the first, every
    /// fetch is dripped; from the second, the daemon's own (bounded) passes and libiio's is dripped,
    /// so that the listing is held inside libiio when the stop comes.
    @Test(arguments: [0, 1])
    func aBoardThatSendsItsDescriptionSlowlyHoldsNeitherTheStartNorTheStop(firstDripped: Int) throws {
        let board = try ScriptedListener { peer in
            _ = peer.read(until: { $0.contains(UInt8(ascii: "\n")) })  // PRINT
            guard peer.index >= firstDripped else {
                peer.write(Array("10\n0123456789\n".utf8))
                return peer.pause(seconds: 5)
            }
            guard peer.write(Array("1000000\n".utf8)) else { return }
            while !peer.isClosed, peer.write([UInt8(ascii: " ")]) { peer.pause(seconds: 0.5) }
        }
        let (daemon, listening) = try Self.startTimed(port: board.port)
        #expect(listening < Self.dripBound, "the socket listened after \(listening) s")
        try waitUntil(seconds: 10) { board.accepted > firstDripped }  // the dripped fetch is under way
        usleep(1_000_000)  // stays: the daemon is asked and stopped well into the drip, not at its start
        let client = try TestClient(path: daemon.socket)
        _ = try client.next("VERSION")
        let exit = daemon.secondsToExit(after: SIGTERM)
        #expect(exit.map { $0 < 3 } == true, "SIGTERM ended the daemon after \(exit.map { "\($0) s" } ?? "more than 10 s")")
        print("slow board, dripping from fetch \(firstDripped): listening after \(listening) s; SIGTERM ended it in \(exit ?? .infinity) s")
    }

    /// Defect 9: an iiod that takes the connection and never answers.
    @Test func aBoardThatNeverAnswersIsRefusedAfterItsTimeLimitWithoutHoldingTheStart() throws {
        let board = try ScriptedListener { peer in peer.pause(seconds: 30) }
        let (daemon, listening) = try Self.startTimed(port: board.port)
        // A start held by the board listens only after the board is refused: the order says so
        // whatever the machine's load, the time only when it is light.
        let refusal = "is refused: its description did not come within 5.0 s"
        let refusedFirst = daemon.waitForLog(refusal, seconds: 0.01)
        #expect(listening < Self.startBound || !refusedFirst, "the socket listened after \(listening) s, after the board was refused")
        #expect(daemon.waitForLog(refusal, seconds: 10))
        let exit = daemon.secondsToExit(after: SIGTERM)
        #expect(exit.map { $0 < 3 } == true, "SIGTERM ended the daemon after \(exit.map { "\($0) s" } ?? "more than 10 s")")
        print("silent board: listening after \(listening) s; SIGTERM ended it in \(exit ?? .infinity) s")
    }

    /// Defect 6: libiio allocates the length a board announces and reads it; 2 GB announced and
    /// hundreds of MB streamed grew the daemon by as much at every listing.
    @Test func aBoardThatAnnouncesAHugeDescriptionIsRefusedBeforeAnythingIsAllocated() throws {
        // What the daemon took of the first answer: all that libiio reads, it has allocated.
        let taken = Mutex<Int?>(nil)
        let board = try ScriptedListener { peer in
            _ = peer.read(until: { $0.contains(UInt8(ascii: "\n")) })
            guard peer.write(Array("2147483646\n".utf8)) else { return }
            let chunk = [UInt8](repeating: UInt8(ascii: "<"), count: 1 << 20)
            var sent = 0
            while sent < 600 << 20, !peer.isClosed, peer.write(chunk) { sent += chunk.count }
            taken.withLock { $0 = $0 ?? sent }
        }
        let (daemon, _) = try Self.startTimed(port: board.port)
        try waitUntil(seconds: 20) { taken.withLock { $0 } != nil }
        let megabytes = Double(taken.withLock { $0 } ?? 0) / 1048576
        // The kernel's buffers take a few megabytes before the hang-up is seen.
        #expect(megabytes < 16, "the daemon took \(megabytes) MB of the announced 2 GB before hanging up")
        #expect(daemon.waitForLog("is refused: its description would be 2147483646 bytes, more than the 4 MiB allowed", seconds: 10))
        print("huge description: \(megabytes) MB sent before the daemon hung up; RSS \(daemon.process.residentMegabytes) MB")
        daemon.signal(SIGTERM)
    }

    @Test func anUnreachableBoardLeavesTheDaemonRunningAndSaysWhy() throws {
        let daemon = try Self.daemon(port: try freeLoopbackPort())
        defer { daemon.signal(SIGTERM) }
        #expect(daemon.waitForLog("cannot reach the IIO context ip:127.0.0.1:"), "the listing names the unreachable context")
        let client = try TestClient(path: daemon.socket)
        _ = try client.next("VERSION")
        try client.send(#"{"class":"DEVICES"}"#)
        #expect(try client.decode(DevicesReply.self, try client.next("DEVICES")).devices.isEmpty)
    }
}

@Test func networkSensorsAreLibiioNetworkURIs() throws {
    let bad = try #require(try YAMLNode.parse("network_sensors: [\"usb:1.2.3\"]", maximumNodes: 100))
    #expect { try Configuration.read(bad, at: Place(file: "motiond.conf")) } throws: {
        "\($0)" == "motiond.conf: network_sensors: \"usb:1.2.3\" is not a libiio network URI (ip:host or ip:host:port)"
    }
    let good = try Configuration.read(
        try #require(try YAMLNode.parse("network_sensors: [ip:board.local, \"ip:10.0.0.2:30431\"]", maximumNodes: 100)), at: Place(file: "motiond.conf"))
    #expect(good.networkSensors == ["ip:board.local", "ip:10.0.0.2:30431"])
}
