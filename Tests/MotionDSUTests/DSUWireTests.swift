import MotionSystem
import NIOCore
import Testing
import TestSupport

@testable import MotionDSU

/// The packets against the specification's test client (its own layout and CRC), and the requests a
/// server must drop.
@Suite struct DSUWireTests {
    /// zlib's CRC-32 and the test client's bitwise one agree on the standard check value
    /// (CRC-32/ISO-HDLC of "123456789" is 0xCBF43926).
    @Test func theCRCIsZlibsCRC32() {
        let check = Array("123456789".utf8)
        #expect(check.withUnsafeBytes { DSUWire.crc32($0) } == 0xCBF4_3926)
        // Continued over two parts, as a packet is read around its CRC field.
        #expect(check[4...].withUnsafeBytes { rest in check[..<4].withUnsafeBytes { DSUWire.crc32(rest, continuing: DSUWire.crc32($0)) } } == 0xCBF4_3926)
        #expect(DSUTestClient.crc32(check) == 0xCBF4_3926)
    }

    @Test func everyReplyHasTheSizeAndCRCClientsCheck() throws {
        let writer = DSUPacketWriter(serverID: 0xDEAD_BEEF)
        let client = try DSUTestClient(serverPort: 9)
        let version = writer.version()
        guard case .version(1001)? = client.check(Array(version.readableBytesView), received: 0) else {
            Issue.record("version reply refused: \(client.violations)")
            return
        }
        let pad = DSUPad(slot: 0, model: .fullGyroscope)
        guard case .portInformation(let connected)? = client.check(Array(writer.portInformation(slot: 0, pad: pad).readableBytesView), received: 0) else {
            Issue.record("port information refused: \(client.violations)")
            return
        }
        #expect(connected == .init(slot: 0, state: 2, model: 2, connection: 1, mac: [0x02, 0x6D, 0x6F, 0x74, 0, 0]))
        guard case .portInformation(let absent)? = client.check(Array(writer.portInformation(slot: 3, pad: nil).readableBytesView), received: 0) else {
            Issue.record("port information refused: \(client.violations)")
            return
        }
        #expect(absent == .init(slot: 3, state: 0, model: 0, connection: 0, mac: [0, 0, 0, 0, 0, 0]))

        var buffer = ByteBuffer()
        writer.padData(
            into: &buffer, pad: pad, packetNumber: 7, timestamp: 123_456_789, acceleration: (0.25, -1, 0.5),
            rotationRate: (pitch: 10, yaw: -20, roll: 30))
        guard case .padData(let data)? = client.check(Array(buffer.readableBytesView), received: 0) else {
            Issue.record("pad data refused: \(client.violations)")
            return
        }
        #expect(data.connected && data.packetNumber == 7 && data.timestamp == 123_456_789)
        #expect(data.acceleration == (0.25, -1, 0.5) && data.pitch == 10 && data.yaw == -20 && data.roll == 30)
        // The same packet again breaks the rules: its number and its timestamp did not increase.
        _ = client.check(Array(buffer.readableBytesView), received: 0)
        #expect(client.violations.count == 1 && client.violations[0].contains("packet number"))
    }

    @Test func theClientsRequestsAreUnderstood() throws {
        let client = try DSUTestClient(serverPort: 9)
        func parse(_ type: UInt32, _ body: [UInt8]) throws(DSURequest.Problem) -> DSURequest {
            try DSURequest(datagram: ByteBuffer(bytes: client.packet(type: type, body: body)))
        }
        #expect(try parse(0x10_0000, []) == .version)
        #expect(try parse(0x10_0001, [2, 0, 0, 0, 0, 3]) == .portInformation(slots: [0, 3]))
        // A slot above 3 is no slot: skipped.
        #expect(try parse(0x10_0001, [2, 0, 0, 0, 9, 1]) == .portInformation(slots: [1]))
        #expect(try parse(0x10_0002, [0, 0, 0, 0, 0, 0, 0, 0]) == .padData(.init(allPads: true)))
        #expect(try parse(0x10_0002, [1, 2, 0, 0, 0, 0, 0, 0]) == .padData(.init(slot: 2)))
        let mac: [UInt8] = [0x02, 0x6D, 0x6F, 0x74, 0, 1]
        #expect(try parse(0x10_0002, [2, 0] + mac) == .padData(.init(mac: DSUMAC(mac))))
        // Bytes beyond the length are the specification's "truncate if it's too long".
        let padded = client.packet(type: 0x10_0000, body: []) + [1, 2, 3]
        #expect(try DSURequest(datagram: ByteBuffer(bytes: padded)) == .version)
    }

    /// Each malformed datagram is dropped for its own reason.
    @Test func malformedDatagramsAreRefusedWithTheirReason() throws {
        let client = try DSUTestClient(serverPort: 9)
        let good = client.packet(type: 0x10_0002, body: [1, 0, 0, 0, 0, 0, 0, 0])
        func problem(_ bytes: [UInt8]) -> DSURequest.Problem? {
            do {
                _ = try DSURequest(datagram: ByteBuffer(bytes: bytes))
                return nil
            } catch { return error }
        }
        var badCRC = good
        badCRC[25] ^= 0xFF
        var server = good
        server.replaceSubrange(0..<4, with: Array("DSUS".utf8))
        var longer = good
        longer[6] = 200
        #expect(problem(Array(good.prefix(19))) == .tooShort)
        #expect(problem(Array(good.prefix(27))) == .badLength)
        #expect(problem(longer) == .badLength)
        #expect(problem(badCRC) == .badCRC)
        #expect(problem(server) == .badMagic)
        var oldVersion = good
        oldVersion[4] = 0xE8  // 1000
        #expect(problem(oldVersion) == .badVersion)
        #expect(problem(client.packet(type: 0x10_0001, body: [0, 0, 0, 0])) == .badBody)
        #expect(problem(client.packet(type: 0x10_0001, body: [5, 0, 0, 0, 0, 1, 2, 3, 0])) == .badBody)
        #expect(problem(client.packet(type: 0x10_0001, body: [3, 0, 0, 0, 0])) == .badBody)
        #expect(problem(client.packet(type: 0x10_0002, body: [1, 0])) == .badBody)
        #expect(problem(client.packet(type: 0x10_0003, body: [])) == .unknownType)
        #expect(problem(good) == nil)
    }

    @Test func leasesLastFiveSecondsPerSlotAndAreBoundedInAllAndPerSource() throws {
        var leases = DSULeases(maximumClients: 3, maximumPerSource: 2)
        let start = NIODeadline.uptimeNanoseconds(1_000_000_000)
        let addresses = try (1000..<1004).map { try SocketAddress(ipAddress: "127.0.0.1", port: $0) }
        let (a, b, c, d) = (addresses[0], addresses[1], addresses[2], addresses[3])
        /// As the server asks: a known client renews; a new one is admitted while the table and its
        /// source have room.
        func ask(_ subscription: DSURequest.Subscription, from address: SocketAddress, as user: UInt32, at now: NIODeadline) -> Bool {
            if !leases.holdsLease(address) {
                let source = DSUSource.user(user)
                guard !leases.isFull, !leases.isFull(source) else { return false }
                leases.admit(address, destination: DatagramAddress(address)!, source: source)
            }
            leases.renew(subscription, from: address, at: now)
            return true
        }
        let first = ask(.init(slot: 1), from: a, as: 1000, at: start)
        let second = ask(.init(mac: DSUMAC(slot: 0)), from: b, as: 1000, at: start + .seconds(2))
        let third = ask(.init(allPads: true), from: c, as: 1000, at: start + .seconds(2))
        #expect(first && second && !third, "two clients of one user allowed, a third refused")
        let otherUser = ask(.init(allPads: true), from: c, as: 1001, at: start + .seconds(2))
        let fourth = ask(.init(allPads: true), from: d, as: 1002, at: start + .seconds(2))
        #expect(otherUser && !fourth, "another user's client allowed, then the table full at 3")
        // Slot 1: a's (until 5 s) and c's every pad (until 7 s).
        #expect(leases.anyHolds(1, at: start + .milliseconds(6999)) && !leases.anyHolds(1, at: start + .seconds(7)))
        // A MAC that is none of the slots' subscribes to nothing.
        let stranger = ask(.init(mac: DSUMAC([1, 2, 3, 4, 5, 6])), from: a, as: 1000, at: start + .seconds(3))
        #expect(stranger && !leases.anyHolds(3, at: start + .seconds(8)))
        leases.expire(at: start + .seconds(6))
        #expect(leases.clients.map(\.address) == [b, c])
        let again = ask(.init(allPads: true), from: d, as: 1000, at: start + .seconds(6))
        #expect(again, "room again, in the table and for the user, once a lease ran out")
        #expect((0..<4).allSatisfy { leases.anyHolds($0, at: start + .seconds(10)) })
    }
}
