import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A DSU (cemuhook) client written from the protocol's specification (the README of
/// `v1993/cemuhook-protocol`) and the emulators' acceptance rules, not from motiond's code: its own
/// packet layout and its own CRC-32. Every packet it receives is held to what the clients check:
///
/// - exact sizes per type: version 22, port information 32, pad data 100 (Citra and yuzu reject any
///   other; Dolphin and Cemu compute the CRC over exactly those);
/// - magic `DSUS`, version 1001, length = size − 16, a valid CRC-32, one server id for the run;
/// - pad data: a packet number greater than the last of its slot (Citra) and a motion timestamp
///   greater than the last (Cemu).
///
/// A packet that breaks a rule is recorded in `violations` and not returned.
public final class DSUTestClient: @unchecked Sendable {
    // @unchecked: used by one thread at a time (handed to an emulator's thread, never shared).
    public struct PortInformation: Equatable, Sendable {
        public var slot: Int
        /// 0 not connected, 2 connected.
        public var state: Int
        /// 1 partial gyroscope, 2 full.
        public var model: Int
        public var connection: Int
        public var mac: [UInt8]

        public init(slot: Int, state: Int, model: Int, connection: Int, mac: [UInt8]) {
            (self.slot, self.state, self.model, self.connection, self.mac) = (slot, state, model, connection, mac)
        }
    }

    public struct PadData: Sendable {
        public var port: PortInformation
        public var connected: Bool
        public var packetNumber: UInt32
        /// µs.
        public var timestamp: UInt64
        /// g, the DSU's axes.
        public var acceleration: (x: Float, y: Float, z: Float)
        /// °/s.
        public var pitch: Float, yaw: Float, roll: Float
        /// When it arrived, CLOCK_MONOTONIC ns.
        public var received: Int64
    }

    public enum Packet: Sendable {
        case version(Int)
        case portInformation(PortInformation)
        case padData(PadData)
    }

    /// The ways of subscribing to pad data (the request's flags).
    public enum Subscription: Sendable {
        case allPads
        case slot(Int)
        case mac([UInt8])
    }

    public let descriptor: Int32
    public let serverPort: Int
    public let clientID = UInt32.random(in: .min ... .max)
    public private(set) var violations: [String] = []
    public private(set) var serverID: UInt32?
    private var lastPacketNumber: [Int: UInt32] = [:]
    private var lastTimestamp: [Int: UInt64] = [:]

    /// A UDP socket on 127.0.0.1 for the server at 127.0.0.1:`serverPort`; `owner`: the user the
    /// socket belongs to (made under that file-system uid on this thread, as that user's program
    /// would make it; root only), else the process's.
    public init(serverPort: Int, owner: UInt32? = nil) throws {
        self.serverPort = serverPort
        descriptor = try owner.map { uid in try Self.asFileSystemUser(uid) { socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0) } }
            ?? socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestbedError("socket: errno \(errno)") }
        var address = loopbackAddress(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard bound else {
            close(descriptor)
            throw TestbedError("bind: errno \(errno)")
        }
        // Room for a few seconds of 1 kHz pad data while a test is busy elsewhere.
        var size: Int32 = 4 << 20
        setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(descriptor) }

    /// Runs `body` with this thread's file-system uid set to `uid` (setfsuid(2), a thread's own
    /// credential: a socket made meanwhile is `uid`'s), then root's again.
    private static func asFileSystemUser<T>(_ uid: UInt32, _ body: () -> T) throws -> T {
        // setfsuid is not in Glibc's Swift module.
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setfsuid") else { throw TestbedError("no setfsuid") }
        let setfsuid = unsafeBitCast(symbol, to: (@convention(c) (UInt32) -> Int32).self)
        _ = setfsuid(uid)
        defer { _ = setfsuid(0) }
        return body()
    }

    // MARK: Requests

    public func requestVersion() throws { try send(type: 0x10_0000, body: []) }

    public func requestPortInformation(slots: [Int]) throws {
        try send(type: 0x10_0001, body: le(Int32(slots.count)) + slots.map(UInt8.init))
    }

    public func requestPadData(_ subscription: Subscription) throws {
        let body: [UInt8] =
            switch subscription {
            case .allPads: [0, 0] + [UInt8](repeating: 0, count: 6)
            case .slot(let slot): [1, UInt8(slot)] + [UInt8](repeating: 0, count: 6)
            case .mac(let mac): [2, 0] + mac
            }
        try send(type: 0x10_0002, body: body)
    }

    /// A client's packet as the specification builds it: header, type, body, CRC over all of it.
    public func packet(type: UInt32, body: [UInt8]) -> [UInt8] {
        var bytes = Array("DSUC".utf8) + le(UInt16(1001)) + le(UInt16(4 + body.count)) + le(UInt32(0)) + le(clientID) + le(type) + body
        bytes.replaceSubrange(8..<12, with: le(Self.crc32(bytes)))
        return bytes
    }

    public func send(type: UInt32, body: [UInt8]) throws { try send(raw: packet(type: type, body: body)) }

    /// Sends `bytes` as they are (hostile datagrams too).
    public func send(raw bytes: [UInt8]) throws {
        var address = loopbackAddress(port: serverPort)
        let sent = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(descriptor, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard sent == bytes.count else { throw TestbedError("sendto: errno \(errno)") }
    }

    /// Sends `bytes` to 127.0.0.1:`serverPort` from UDP source port 0, which no socket can bind: a
    /// raw socket writes the UDP header itself (root only; checksum 0, "none", which IPv4 allows).
    public static func sendFromPortZero(_ bytes: [UInt8], serverPort: Int) throws {
        let fd = socket(AF_INET, Int32(SOCK_RAW.rawValue), Int32(IPPROTO_UDP))
        guard fd >= 0 else { throw TestbedError("raw socket: errno \(errno) (root only)") }
        defer { close(fd) }
        let datagram = le(UInt16(0).bigEndian) + le(UInt16(serverPort).bigEndian) + le(UInt16(8 + bytes.count).bigEndian) + [0, 0] + bytes
        var address = loopbackAddress(port: serverPort)
        let sent = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, datagram, datagram.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard sent == datagram.count else { throw TestbedError("raw sendto: errno \(errno)") }
    }

    // MARK: Receiving

    /// The next packet that keeps the rules, or nil when none comes within `seconds`.
    public func receive(within seconds: Double = 2) -> Packet? {
        let deadline = Self.now() + Int64(seconds * 1e9)
        var buffer = [UInt8](repeating: 0, count: 2048)
        while true {
            let left = deadline - Self.now()
            guard left > 0 else { return nil }
            var reader = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&reader, 1, Int32(max(1, left / 1_000_000))) > 0 else { continue }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { continue }
            if let packet = check(Array(buffer[..<count]), received: Self.now()) { return packet }
        }
    }

    /// Every packet that comes within `seconds`.
    public func receiveAll(for seconds: Double) -> [Packet] {
        let deadline = Self.now() + Int64(seconds * 1e9)
        var packets: [Packet] = []
        while Self.now() < deadline, let packet = receive(within: Double(deadline - Self.now()) / 1e9) { packets.append(packet) }
        return packets
    }

    /// Every packet already waiting in the socket.
    public func receiveQueued() -> [Packet] {
        var packets: [Packet] = []
        var buffer = [UInt8](repeating: 0, count: 2048)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard count >= 0 else { return packets }
            if let packet = check(Array(buffer[..<count]), received: Self.now()) { packets.append(packet) }
        }
    }

    /// Whether nothing at all (not even a packet that breaks the rules) comes within `seconds`.
    public func receivesNothing(for seconds: Double) -> Bool {
        var reader = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&reader, 1, Int32(seconds * 1000)) == 0
    }

    /// Holds a datagram to the rules; the packet, or nil (and a violation recorded).
    public func check(_ bytes: [UInt8], received: Int64) -> Packet? {
        func violation(_ text: String) -> Packet? {
            violations.append(text)
            return nil
        }
        guard bytes.count >= 20 else { return violation("a \(bytes.count)-byte datagram") }
        guard Array(bytes[0..<4]) == Array("DSUS".utf8) else { return violation("magic \(bytes[0..<4])") }
        guard u16(bytes, 4) == 1001 else { return violation("version \(u16(bytes, 4))") }
        let type = u32(bytes, 16)
        let size: Int
        switch type {
        case 0x10_0000: size = 22
        case 0x10_0001: size = 32
        case 0x10_0002: size = 100
        default: return violation("message type \(String(type, radix: 16))")
        }
        guard bytes.count == size else { return violation("type \(String(type, radix: 16)): \(bytes.count) bytes, not \(size)") }
        guard Int(u16(bytes, 6)) == size - 16 else { return violation("length \(u16(bytes, 6)) in a \(size)-byte packet") }
        var zeroed = bytes
        zeroed.replaceSubrange(8..<12, with: [0, 0, 0, 0])
        guard u32(bytes, 8) == Self.crc32(zeroed) else { return violation("bad CRC") }
        let id = u32(bytes, 12)
        if let serverID, serverID != id { return violation("server id changed from \(serverID) to \(id)") }
        serverID = id
        switch type {
        case 0x10_0000: return .version(Int(u16(bytes, 20)))
        case 0x10_0001: return .portInformation(port(bytes))
        default:
            let data = PadData(
                port: port(bytes), connected: bytes[31] == 1, packetNumber: u32(bytes, 32), timestamp: u64(bytes, 68),
                acceleration: (f32(bytes, 76), f32(bytes, 80), f32(bytes, 84)), pitch: f32(bytes, 88), yaw: f32(bytes, 92), roll: f32(bytes, 96),
                received: received)
            let slot = data.port.slot
            if let last = lastPacketNumber[slot], data.packetNumber <= last {
                return violation("slot \(slot): packet number \(data.packetNumber) after \(last)")
            }
            if let last = lastTimestamp[slot], data.timestamp <= last {
                return violation("slot \(slot): timestamp \(data.timestamp) µs after \(last)")
            }
            lastPacketNumber[slot] = data.packetNumber
            lastTimestamp[slot] = data.timestamp
            return .padData(data)
        }
    }

    private func port(_ b: [UInt8]) -> PortInformation {
        PortInformation(slot: Int(b[20]), state: Int(b[21]), model: Int(b[22]), connection: Int(b[23]), mac: Array(b[24..<30]))
    }

    // MARK: Bytes

    /// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), bit by bit: a second implementation,
    /// beside the server's zlib.
    public static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    public static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}

private func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value.littleEndian, Array.init) }
private func u16(_ b: [UInt8], _ at: Int) -> UInt16 { UInt16(b[at]) | UInt16(b[at + 1]) << 8 }
private func u32(_ b: [UInt8], _ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(b[at + $1]) << (8 * $1) } }
private func u64(_ b: [UInt8], _ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(b[at + $1]) << (8 * $1) } }
private func f32(_ b: [UInt8], _ at: Int) -> Float { Float(bitPattern: u32(b, at)) }
