import HubTestKit
import MotionCore
import MotionDevices
import MotionWire
import NIOCore
import Testing

@testable import MotionHub

/// WATCH (docs/protocol.md): a sensor runs only while some client needs it (design.md, "Sampling":
/// iio-sensor-proxy's claim and release), at the fastest rate its clients ask for; a stream the
/// machine cannot give is refused with the reason. The hub on the imu-buffered machine, its scans fed
/// by the test.
@Suite struct WatchRulesTests {
    static let imu = Machines.imu

    /// Nobody watches: the sensor is closed. A WATCH is answered with its id and streams, and opens
    /// the IMU; (from Hardware.Server.greetingDevicesErrorsWatchPollAndStatus).
    @Test func aWatchIsAnsweredWithItsStreamsAndOpensTheSensorNobodyElseNeeded() async throws {
        let scripted = try await ScriptedHub(devices: [Self.imu])
        let (client, id) = try await scripted.connect()
        #expect(scripted.source.running(Self.imu.number) == nil, "nobody watches yet: closed")
        try await scripted.send(line: #"{"class":"WATCH","id":3,"streams":["motion","accelerometer"],"interval":0.02}"#, from: id)
        let watching = try #require(client.watchings.last)
        #expect(watching.id == .integer(3))
        #expect(Set(watching.streams.map(\.stream)) == [.motion, .accelerometer])
        let opening = try #require(scripted.source.running(Self.imu.number))
        #expect(opening.kinds == [.accelerometer, .gyroscope] && opening.deviceRate == 50, "\(opening)")
        try await scripted.shutDown()
    }

    /// A stream whose sensor the machine lacks is refused as `unavailable`, naming it; the client
    /// stays served (the IMU has no magnetometer).
    @Test func aWatchOfAStreamTheMachineLacksIsRefusedAsUnavailable() async throws {
        let (scripted, client, id) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","id":2,"streams":["magnetometer"]}"#, on: [Self.imu])
        let error = try #require(client.errors.last)
        #expect(error.code == .unavailable && error.id == .integer(2))
        #expect(error.message == "magnetometer needs a sensor this machine does not have: magnetometer")
        #expect(scripted.source.openings.withLock { $0.isEmpty }, "nothing opened for a refused watch")
        let status = try await scripted.ask(.status(id: nil), from: client, id)
        #expect(status.map { if case .status = $0 { true } else { false } } == true, "still served")
        try await scripted.shutDown()
    }

    /// Unwatching everything is answered with no streams, and the sensor closes at once (no poll
    /// keeps it warm).
    @Test func unwatchingEverythingIsAnsweredWithNoStreamsAndClosesTheSensor() async throws {
        let (scripted, client, id) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","streams":["gyroscope"],"interval":0.01}"#, on: [Self.imu])
        #expect(scripted.source.running(Self.imu.number) != nil)
        try await scripted.send(line: #"{"class":"WATCH","id":6,"enable":false}"#, from: id)
        let watching = try #require(client.watchings.last)
        #expect(watching.id == .integer(6) && watching.streams.isEmpty)
        #expect(scripted.source.running(Self.imu.number) == nil)
        try await scripted.shutDown()
    }

    /// The sensor runs at the fastest rate any client asks for: a client at 0.02 s opens the IMU at
    /// 50 Hz, a second at 0.01 s reopens it at 100 Hz at once; when that one leaves, it goes back to
    /// 50 Hz after 1 s (`CaptureManager.rateSettling`: a client switching between two intervals would
    /// otherwise reopen it each time).
    @Test func theSensorRunsAtTheFastestRateItsClientsAskFor() async throws {
        let scripted = try await ScriptedHub(devices: [Self.imu])
        let (_, slowID) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["gyroscope"],"interval":0.02}"#, from: slowID)
        #expect(scripted.source.running(Self.imu.number)?.deviceRate == 50)
        let (_, fastID) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["gyroscope"],"interval":0.01}"#, from: fastID)
        #expect(scripted.source.running(Self.imu.number)?.deviceRate == 100)
        try await scripted.disconnect(fastID)
        #expect(scripted.source.running(Self.imu.number)?.deviceRate == 100)
        let lowered = await scripted.advance { scripted.source.running(Self.imu.number)?.deviceRate == 50 }
        #expect(lowered == .seconds(1))
        try await scripted.disconnect(slowID)
        #expect(scripted.source.running(Self.imu.number) == nil, "the last client left: closed")
        try await scripted.shutDown()
    }

    /// WATCHING says each stream's interval, `motion`'s frame and a latency asked for; an event
    /// stream has no interval (it sends changes).
    @Test func watchingSaysEachStreamsIntervalFrameAndLatency() async throws {
        let scripted = try await ScriptedHub(devices: [Self.imu])
        let (client, id) = try await scripted.connect()
        try await scripted.send(
            line: #"{"class":"WATCH","streams":["motion","gyroscope","orientation"],"interval":0.05,"latency":0.2,"frame":"xArbitraryCorrectedZVertical"}"#,
            from: id)
        let streams = try #require(client.watchings.last).streams
        #expect(
            streams == [
                Watching.Stream(stream: .gyroscope, interval: 0.05, latency: 0.2),
                Watching.Stream(stream: .motion, interval: 0.05, frame: .xArbitraryCorrectedZVertical, latency: 0.2),
                Watching.Stream(stream: .orientation),
            ], "\(streams)")
        try await scripted.shutDown()
    }

    /// A latency outside 0…10 s is refused, naming the range.
    @Test func aLatencyOutOfRangeIsRefused() async throws {
        let (scripted, client, _) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","id":1,"streams":["motion"],"latency":11}"#, on: [Self.imu])
        let error = try #require(client.errors.last)
        #expect(error.code == .invalidArgument && error.message.contains("latency 11.0 s is outside 0.0…10.0 s"), "\(error)")
        #expect(scripted.source.openings.withLock { $0.isEmpty })
        try await scripted.shutDown()
    }

    /// An interval outside 1 ms…60 s is refused, naming the range (docs/protocol.md, WATCH); a watch
    /// without one gets the default, 0.1 s.
    @Test func anIntervalOutOfRangeIsRefusedAndNoneIsTheDefault() async throws {
        let (scripted, client, id) = try await ScriptedHub.withClient(
            sending: #"{"class":"WATCH","id":1,"streams":["gyroscope"],"interval":0.0001}"#, on: [Self.imu])
        let error = try #require(client.errors.last)
        #expect(error.code == .invalidArgument && error.message == "interval 0.0001 s is outside 0.001…60.0 s", "\(error)")
        try await scripted.send(line: #"{"class":"WATCH","streams":["gyroscope"]}"#, from: id)
        #expect(client.watchings.last?.streams == [Watching.Stream(stream: .gyroscope, interval: 0.1)])
        #expect(scripted.source.running(Self.imu.number)?.rate == 10)
        try await scripted.shutDown()
    }

    /// A client that lets its samples wait 100 ms opens the sensor with that latency (a buffered
    /// device then batches its scans: 10 at 100 Hz) and gets every sample of a batch, each with its
    /// own timestamp. A second client that waits for nothing brings the latency back to 0: a sensor
    /// batches only as far as all its clients let it (from Hardware.Server.aLatencyBatchesTheBufferAndLosesNoSample;
    /// the watermark libiio writes from it stays tested there).
    @Test func aLatencyBatchesTheSensorAndLosesNoSample() async throws {
        let scripted = try await ScriptedHub(devices: [Self.imu])
        let (patient, patientID) = try await scripted.connect()
        try await scripted.send(
            line: #"{"class":"WATCH","streams":["accelerometer","gyroscope"],"interval":0.01,"latency":0.1}"#, from: patientID)
        #expect(patient.watchings.last?.streams.first?.latency == 0.1)
        #expect(scripted.source.running(Self.imu.number)?.latency == 0.1)
        let times = (0..<10).map { 2_000_000_000 + Int64($0) * 10_000_000 }
        let batch = times.enumerated().flatMap { i, t in Self.imu.scan(accelerometer: Vector3(x: 0, y: 0, z: 16384), gyroscope: Vector3(x: Double(i), y: 0, z: 0), at: t) }
        try await scripted.feed([batch], to: Self.imu.number)
        #expect(patient.gyroscopes.map(\.timestamp) == times)
        let (_, eagerID) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["accelerometer"],"interval":0.01}"#, from: eagerID)
        #expect(scripted.source.running(Self.imu.number)?.latency == 0)
        try await scripted.shutDown()
    }

    /// A client that disconnects ends its watches: the sensor closes when nobody else needs it, and
    /// another client's watch of another device goes on.
    @Test func aClientThatDisconnectsClosesOnlyTheSensorsNobodyElseNeeds() async throws {
        let light = Machines.ambientLight[1]
        let scripted = try await ScriptedHub(devices: [Self.imu, light])
        let (_, imuID) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["gyroscope"],"interval":0.01}"#, from: imuID)
        let (brightness, lightID) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["light"]}"#, from: lightID)
        try await scripted.disconnect(imuID)
        #expect(scripted.source.running(Self.imu.number) == nil)
        #expect(scripted.source.running(light.number) != nil)
        let before = brightness.lights.count
        await scripted.run(for: .seconds(1))
        #expect(brightness.lights.count >= before, "the light's watcher is still served")
        #expect(scripted.source.openingCount(of: light.number) == 1, "the light was never reopened")
        try await scripted.shutDown()
    }

    /// A second watcher of an event stream whose sensor runs gets the current state at once, with
    /// no wait for the next reading (docs/protocol.md: "the current state when watching starts").
    @Test func aSecondWatcherOfAnEventStreamGetsTheStateAtOnce() async throws {
        let display = Machines.laptop
        let scripted = try await ScriptedHub(devices: [display])
        scripted.source.pose.withLock { $0[display.number] = Vector3(x: 0, y: Units.standardGravity, z: 0) }
        let (first, firstID) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["orientation"]}"#, from: firstID)
        #expect(await scripted.advance { !first.orientations.isEmpty } != nil)
        let (second, secondID) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"WATCH","streams":["orientation"]}"#, from: secondID)
        #expect(second.orientations.map(\.orientation) == [.normal], "at once, before the loop's clock moved")
        try await scripted.shutDown()
    }
}
