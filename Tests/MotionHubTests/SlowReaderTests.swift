import HubTestKit
import MotionCore
import MotionDevices
import MotionWire
import NIOCore
import Testing

@testable import MotionHub

/// A slow reader never slows the sensors or other clients: each client has a bounded queue; for a
/// stream the oldest unsent samples are dropped and the client is told how many (design.md, "The
/// socket protocol"). Two clients of the socket's kind on the imu-buffered machine.
@Suite struct SlowReaderTests {
    /// 8,000 accelerometer samples as fast as the hub takes them: the reading client gets every one;
    /// the one that reads nothing meanwhile gets, once it reads, fewer samples and a DROPPED that
    /// accounts for the rest, and STATUS counts them (from Hardware.Server.aClientThatNeverReadsSlowsNobodyAndIsToldWhatItLost).
    @Test func aClientThatNeverReadsSlowsNobodyAndIsToldWhatItLost() async throws {
        let imu = Machines.imu
        let scripted = try await ScriptedHub(devices: [imu])
        let (reader, readerID) = try await scripted.connectLines()
        let (sleeper, sleeperID) = try await scripted.connectLines()
        sleeper.isWritable = false
        for id in [readerID, sleeperID] {
            try await scripted.send(line: #"{"class":"WATCH","streams":["accelerometer"],"interval":0.01}"#, from: id)
        }
        let count = 8000
        for chunk in stride(from: 0, to: count, by: 1000) {
            let reads = (chunk..<(chunk + 1000)).map { i in
                [imu.sample(.accelerometer, counts: Vector3(x: 0, y: 0, z: 16384), at: Int64(i + 1) * 10_000_000)!]
            }
            try await scripted.feed(reads, to: imu.number)
        }
        let received = reader.messages.count { if case .accelerometer = $0 { true } else { false } }
        #expect(received == count, "the reading client got every sample")

        sleeper.isWritable = true
        try await scripted.flush(sleeperID)
        var samples = 0, dropped = 0
        for message in sleeper.messages {
            switch message {
            case .accelerometer: samples += 1
            case .dropped(let d): dropped += d.count
            default: break
            }
        }
        #expect(dropped > 0)
        #expect(samples + dropped == count, "\(samples) received + \(dropped) dropped")
        try await scripted.send(line: #"{"class":"STATUS","id":1}"#, from: readerID)
        let status = reader.messages.compactMap { if case .status(let s) = $0 { s } else { nil } }.last
        #expect(status?.dropped == dropped)
        try await scripted.shutDown()
    }
}
