import HubTestKit
import MotionCore
import MotionDevices
import MotionWire
import NIOCore
import Testing

@testable import MotionHub

/// Every client gets exactly its own interval, on the samples' timestamps (design.md, "Sampling": the
/// interval a client asks for only decimates what it is sent; `StreamDecimator`). The hub on the
/// imu-buffered machine, its scans fed by the test.
@Suite struct DecimationTests {
    static let imu = Machines.imu

    /// Accelerometer samples every `period` ns from `start`, `count` of them.
    static func samples(_ count: Int, every period: Int64 = 10_000_000, from start: Int64 = 10_000_000) -> [[SensorSample]] {
        (0..<count).map { i in [imu.sample(.accelerometer, counts: Vector3(x: 0, y: 0, z: 16384), at: start + Int64(i) * period)!] }
    }

    /// 100 Hz scans lying face up and still, motion asked every 20 ms: every 20 ms on the sample
    /// clock, gravity (0, 0, −1) g and no user acceleration (from Hardware.Server.greetingDevicesErrorsWatchPollAndStatus).
    @Test func motionEvery20msFrom100HzScansIsEvery20msOnTheSampleClock() async throws {
        let (scripted, client, _) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","streams":["motion","accelerometer"],"interval":0.02}"#, on: [Self.imu])
        let scans = (0..<100).map { Self.imu.scan(accelerometer: Vector3(x: 0, y: 0, z: 16384), at: 1_000_000_000 + Int64($0) * 10_000_000) }
        try await scripted.feed(scans, to: Self.imu.number)
        let motions = client.motions
        #expect(motions.count == 50)
        let gaps = zip(motions.dropFirst(), motions).map { $0.timestamp - $1.timestamp }
        #expect(gaps.allSatisfy { $0 == 20_000_000 }, "\(motions.map(\.timestamp))")
        let last = try #require(motions.last)
        #expect(abs(last.gravity.z + 1) < 0.01, "face up: gravity (0, 0, −1) g")
        #expect(last.userAcceleration.length < 0.01)
        try await scripted.shutDown()
    }

    /// 500 clients watch at once, every one its own interval: 10, 20, …, 50 ms. 20 samples at 10 ms:
    /// a client at k × 10 ms gets ⌈20 / k⌉ of them. STATUS counts 500 clients; when all leave, the
    /// sensor closes (from Hardware.Server.fiveHundredClientsConnectWatchAndLeave, whose sockets
    /// ConnectionTests' limits still cover).
    @Test func fiveHundredClientsEachGetTheirOwnIntervalAndTheSensorClosesWhenAllLeave() async throws {
        let scripted = try await ScriptedHub(devices: [Self.imu])
        var clients: [(ScriptedHub.Client, Hub.ClientID)] = []
        for i in 0..<500 {
            let (client, id) = try await scripted.connect()
            try await scripted.send(line: #"{"class":"WATCH","streams":["accelerometer"],"interval":\#(Double(i % 5 + 1) / 100)}"#, from: id)
            clients.append((client, id))
        }
        #expect(scripted.source.openingCount(of: Self.imu.number) == 1, "one opening for all")
        try await scripted.feed(Self.samples(20), to: Self.imu.number)
        for (i, (client, _)) in clients.enumerated() {
            let expected = (20 + i % 5) / (i % 5 + 1)
            #expect(client.accelerometers.count == expected, "client \(i) at \((i % 5 + 1) * 10) ms")
        }
        let status = try await scripted.ask(.status(id: .integer(1)), from: clients[0].0, clients[0].1)
        if case .status(let reply) = status { #expect(reply.clients == 500) } else { Issue.record("no STATUS: \(String(describing: status))") }
        for (_, id) in clients { try await scripted.disconnect(id) }
        #expect(scripted.source.running(Self.imu.number) == nil)
        try await scripted.shutDown()
    }

    /// 35 ms from a 50 Hz sensor is 35 ms on average: gaps of 20 and 40 ms, never a burst
    /// (`StreamDecimator`: the first sample within half a sensor period of each due time).
    @Test func anIntervalBetweenSamplesIsKeptOnAverage() async throws {
        let (scripted, client, _) = try await ScriptedHub.withClient(sending: #"{"class":"WATCH","streams":["accelerometer"],"interval":0.035}"#, on: [Self.imu])
        #expect(scripted.source.running(Self.imu.number)?.deviceRate == 50, "29 Hz asked: the IMU's 50 Hz")
        try await scripted.feed(Self.samples(141, every: 20_000_000), to: Self.imu.number)
        let stamps = client.accelerometers.map(\.timestamp)
        let gaps = Set(zip(stamps.dropFirst(), stamps).map { $0 - $1 })
        #expect(gaps.isSubset(of: [20_000_000, 40_000_000]), "\(gaps)")
        let average = Double(stamps.last! - stamps.first!) / Double(stamps.count - 1)
        #expect(abs(average - 35_000_000) < 500_000, "\(average) ns on average")
        try await scripted.shutDown()
    }

    /// The accelerometer's timestamps a client watching it every `interval` seconds gets, fed `batches`
    /// one after the other.
    static func stamps(interval: Double, feeding batches: [[[SensorSample]]]) async throws -> [Int64] {
        let (scripted, client, _) = try await ScriptedHub.withClient(
            sending: #"{"class":"WATCH","streams":["accelerometer"],"interval":\#(interval)}"#, on: [imu])
        for batch in batches { try await scripted.feed(batch, to: imu.number) }
        try await scripted.shutDown()
        return client.accelerometers.map(\.timestamp)
    }

    /// A client asking for the sensor's own period gets every sample despite timestamp jitter (up to
    /// ±2 ms on 10 ms).
    @Test func theSensorsPeriodGivesEverySampleDespiteJitter() async throws {
        let jitter: [Int64] = [0, 2_000_000, -2_000_000, 1_000_000, -1_500_000]
        let reads = (0..<100).map { i in
            [Self.imu.sample(.accelerometer, counts: Vector3(x: 0, y: 0, z: 16384), at: 1_000_000_000 + Int64(i) * 10_000_000 + jitter[i % 5])!]
        }
        #expect(try await Self.stamps(interval: 0.01, feeding: [reads]).count == 100)
    }

    /// After a gap in the data (a second with no sample) the schedule starts again from the next
    /// sample, rather than catch up in a burst.
    @Test func afterAGapTheScheduleRestartsWithoutABurst() async throws {
        let stamps = try await Self.stamps(interval: 0.05, feeding: [Self.samples(50, from: 1_000_000_000), Self.samples(50, from: 2_500_000_000)])
        let gaps = zip(stamps.dropFirst(), stamps).map { $0 - $1 }
        #expect(gaps.filter { $0 < 50_000_000 }.isEmpty, "no burst: \(gaps)")
        #expect(stamps.contains(2_500_000_000), "the first sample after the gap")
    }

    /// A sample stamped before one a client already got (in flight from a capture reopened meanwhile)
    /// is never sent to it.
    @Test func aSampleOlderThanOneSentIsNeverSent() async throws {
        let stamps = try await Self.stamps(interval: 0.01, feeding: [Self.samples(10, from: 1_000_000_000), Self.samples(3, from: 1_050_000_000)])
        #expect(stamps == stamps.sorted() && Set(stamps).count == stamps.count && stamps.count == 10, "\(stamps)")
    }
}
