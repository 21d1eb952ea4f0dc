import HubTestKit
import MotionCore
import MotionDevices
import MotionWire
import NIOCore
import Testing

@testable import MotionHub

/// POLL (docs/protocol.md): one snapshot; the first poll after the sensors start waits for the first
/// sample (bounded: 2 s), never answers with zeros (design.md, "Sampling"); polled sensors stay warm
/// for 5 s after the last poll, so that polling in a loop does not open and close them each time;
/// replies come in request order. The hub on the imu-buffered machine, its scans fed by the test.
@Suite struct PollRulesTests {
    static let imu = Machines.imu

    static func scan(gyroscope x: Double, at t: Int64) -> [SensorSample] {
        imu.scan(accelerometer: Vector3(x: 0, y: 0, z: 16384), gyroscope: Vector3(x: x, y: 0, z: 0), at: t)
    }

    /// A poll opens the sensors and waits for their first sample; the next poll is answered from the
    /// latest; they keep running between polls, and close 5 s after the last
    /// (from Hardware.Server: "closed about 5 s after the last poll", 4 to 7 s through a process).
    @Test func aPollStartsTheSensorsWhichStayWarmForTheNextPollsThenClose() async throws {
        let (scripted, client, id) = try await ScriptedHub.withClient(sending: #"{"class":"POLL","id":1,"streams":["accelerometer","gyroscope"]}"#, on: [Self.imu])
        #expect(scripted.source.running(Self.imu.number) != nil)
        #expect(client.snapshots.isEmpty, "no answer before a sample")
        try await scripted.feed([Self.scan(gyroscope: 10, at: 1_000_000)], to: Self.imu.number)
        let first = try #require(client.snapshots.first)
        #expect(first.id == .integer(1) && first.gyroscope?.timestamp == 1_000_000, "the first poll waits for the first sample")

        try await scripted.feed([Self.scan(gyroscope: 20, at: 2_000_000)], to: Self.imu.number)
        try await scripted.send(line: #"{"class":"POLL","id":2,"streams":["accelerometer","gyroscope"]}"#, from: id)
        #expect(client.snapshots.last?.gyroscope?.timestamp == 2_000_000)
        #expect(scripted.source.running(Self.imu.number) != nil, "still running between polls")

        let lastPoll = scripted.loop.now
        let closedAfter = await scripted.advance(upTo: .seconds(10)) { scripted.source.running(Self.imu.number) == nil }
        #expect(closedAfter == .seconds(5), "closed 5 s after the last poll: \(String(describing: closedAfter)) after \(lastPoll)")
        try await scripted.shutDown()
    }

    /// A poll whose sensor gives nothing is answered `timeout` after 2 s, and the sensor then closes
    /// once the poll's linger is over.
    @Test func aPollOfASilentSensorTimesOutAfterTwoSeconds() async throws {
        let (scripted, client, _) = try await ScriptedHub.withClient(sending: #"{"class":"POLL","id":7,"streams":["gyroscope"]}"#, on: [Self.imu])
        let waited = await scripted.advance(upTo: .seconds(5)) { !client.errors.isEmpty }
        #expect(waited == .seconds(2))
        let error = try #require(client.errors.first)
        #expect(error.id == .integer(7) && error.code == .timeout && error.message == "no sample in 2.0 s", "\(error)")
        #expect(await scripted.advance(upTo: .seconds(5)) { scripted.source.running(Self.imu.number) == nil } != nil)
        try await scripted.shutDown()
    }

    /// Replies come in the order of the requests: a STATUS sent behind a poll that waits for its
    /// sensor is answered after the poll's SNAPSHOT, though it was ready first (a client of the
    /// socket's kind, whose replies keep their order).
    @Test func repliesComeInTheOrderOfTheRequestsEvenBehindAWaitingPoll() async throws {
        let scripted = try await ScriptedHub(devices: [Self.imu])
        let (client, id) = try await scripted.connectLines()
        try await scripted.send(line: #"{"class":"POLL","id":1,"streams":["gyroscope"]}"#, from: id)
        try await scripted.send(line: #"{"class":"STATUS","id":2}"#, from: id)
        #expect(Self.replyIDs(client).isEmpty, "the status waits behind the poll")
        try await scripted.feed([Self.scan(gyroscope: 1, at: 1_000_000)], to: Self.imu.number)
        #expect(Self.replyIDs(client) == [.integer(1), .integer(2)])
        try await scripted.shutDown()
    }

    /// The ids of the replies `client` got, in order.
    static func replyIDs(_ client: LineClient) -> [RequestID?] {
        client.messages.compactMap { message -> RequestID?? in
            switch message {
            case .snapshot(let s): s.id
            case .status(let s): s.id
            case .error(let e): e.id
            default: nil
            }
        }
    }

    /// One client may have 32 polls waiting for their sensors; the 33rd is refused at once, saying
    /// why, and the 32 are answered in order by the first sample.
    @Test func pipelinedPollsOnASilentSensorAreCappedAndAnsweredInOrder() async throws {
        let scripted = try await ScriptedHub(devices: [Self.imu])
        let (client, id) = try await scripted.connectLines()
        for n in 1...33 { try await scripted.send(line: #"{"class":"POLL","id":\#(n),"streams":["gyroscope"]}"#, from: id) }
        #expect(Self.replyIDs(client).isEmpty, "the refusal waits behind the polls, in request order")
        try await scripted.feed([Self.scan(gyroscope: 1, at: 1_000_000)], to: Self.imu.number)
        #expect(Self.replyIDs(client) == (1...33).map { .integer(Int64($0)) })
        let answered = client.messages.compactMap { if case .snapshot(let s) = $0 { s.id } else { nil } }
        #expect(answered == (1...32).map { .integer(Int64($0)) })
        let refused = try #require(client.messages.compactMap { if case .error(let e) = $0 { e } else { nil } }.first)
        #expect(refused.id == .integer(33) && refused.code == .unavailable)
        #expect(refused.message == "32 polls are waiting already; wait for their answers")
        try await scripted.shutDown()
    }

    /// A poll while the stream is watched is answered at once from the latest sample: lying face up,
    /// 16384 counts × 0.000598 m/s² = 0.999 g, in CoreMotion's sign (from Hardware.Server.greetingDevicesErrorsWatchPollAndStatus).
    @Test func aPollWhileWatchedIsAnsweredAtOnceFromTheLatestSample() async throws {
        let (scripted, client, id) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","id":3,"streams":["motion","accelerometer"],"interval":0.02}"#, on: [Self.imu])
        let scans = (0..<100).map { Self.scan(gyroscope: 0, at: 1_000_000_000 + Int64($0) * 10_000_000) }
        try await scripted.feed(scans, to: Self.imu.number)
        try await scripted.send(line: #"{"class":"POLL","id":4,"streams":["accelerometer","motion"]}"#, from: id)
        let snapshot = try #require(client.snapshots.last)
        #expect(snapshot.id == .integer(4))
        #expect(abs((snapshot.accelerometer?.acceleration.z ?? 0) + 0.9990) < 0.001, "16384 × 0.000598 m/s² = 0.999 g, CoreMotion's sign")
        #expect(snapshot.motion?.timestamp == 1_990_000_000, "the latest")
        try await scripted.shutDown()
    }

    /// A poll of a stream the machine cannot give is refused as `unavailable`, opening nothing.
    @Test func aPollOfAStreamTheMachineLacksIsRefused() async throws {
        let (scripted, client, _) = try await ScriptedHub.withClient(sending: #"{"class":"POLL","id":1,"streams":["altitude"]}"#, on: [Self.imu])
        let error = try #require(client.errors.first)
        #expect(error.code == .unavailable && error.message == "altitude needs a sensor this machine does not have: pressure")
        #expect(scripted.source.openings.withLock { $0.isEmpty })
        try await scripted.shutDown()
    }

    /// A client that leaves while its poll waits takes the poll with it: the first sample answers
    /// nobody, and the other client's poll is answered.
    @Test func aPollOfAClientThatLeftIsDropped() async throws {
        let scripted = try await ScriptedHub(devices: [Self.imu])
        let (gone, goneID) = try await scripted.connect()
        let (staying, stayingID) = try await scripted.connect()
        try await scripted.send(line: #"{"class":"POLL","id":1,"streams":["gyroscope"]}"#, from: goneID)
        try await scripted.send(line: #"{"class":"POLL","id":2,"streams":["gyroscope"]}"#, from: stayingID)
        try await scripted.disconnect(goneID)
        try await scripted.feed([Self.scan(gyroscope: 1, at: 1_000_000)], to: Self.imu.number)
        #expect(gone.snapshots.isEmpty)
        #expect(staying.snapshots.map(\.id) == [.integer(2)])
        try await scripted.shutDown()
    }
}
