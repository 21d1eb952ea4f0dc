import CZlib
import NIOCore

/// The DSU (cemuhook) protocol's packets, as docs/games.md specifies them: a 16-byte header (magic,
/// version 1001, length, CRC-32, sender id), a message type, the message; little-endian throughout.
/// No I/O: requests are checked from a datagram's bytes, replies written into buffers.
enum DSUWire {
    static let protocolVersion: UInt16 = 1001
    static let headerSize = 16
    /// The header and the message type.
    static let minimumSize = 20
    /// `DSUC` and `DSUS`, as the little-endian integers their four bytes make.
    static let clientMagic = UInt32(ascii: "DSUC")
    static let serverMagic = UInt32(ascii: "DSUS")
    /// Pad slots a server has.
    static let slotCount = 4

    enum MessageType: UInt32 {
        case version = 0x10_0000
        case portInformation = 0x10_0001
        case padData = 0x10_0002

        /// The size of the server's packet of this type, which clients check exactly.
        var replySize: Int {
            switch self {
            case .version: 22
            case .portInformation: 32
            case .padData: 100
            }
        }
    }

    /// zlib's CRC-32 of `bytes`, continuing `crc` (a CRC of the bytes before them).
    static func crc32(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress else { return crc }
        return UInt32(CZlib.crc32(uLong(crc), base.assumingMemoryBound(to: Bytef.self), uInt(bytes.count)))
    }

    /// The CRC of a packet's first `size` bytes with its CRC field (bytes 8–11) taken as zeros, read
    /// in place: no copy of the datagram.
    static func packetCRC(_ bytes: UnsafeRawBufferPointer, size: Int) -> UInt32 {
        var crc = crc32(UnsafeRawBufferPointer(rebasing: bytes[0..<8]))
        crc = withUnsafeBytes(of: UInt32(0)) { crc32($0, continuing: crc) }
        return crc32(UnsafeRawBufferPointer(rebasing: bytes[12..<size]), continuing: crc)
    }
}

/// A pad's MAC address: six bytes, held as the low 48 bits of an integer (compared and hashed
/// without an allocation: Cemu asks by MAC after every packet it gets).
struct DSUMAC: Hashable, Sendable {
    /// The bytes, first byte most significant.
    var value: UInt64

    /// motiond's MAC for `slot`: `02:6d:6f:74:00:0N`, locally administered, the same at every run.
    init(slot: Int) {
        value = 0x02_6D6F_7400_00 | UInt64(slot)
    }

    /// The MAC whose bytes, in order, are `bytes` (six).
    init(_ bytes: [UInt8]) {
        value = bytes.prefix(6).reduce(0) { $0 << 8 | UInt64($1) }
    }

    init(value: UInt64) {
        self.value = value & 0xFFFF_FFFF_FFFF
    }

    /// The slot whose pad has this MAC, if it is one of motiond's.
    var slot: Int? { (0..<DSUWire.slotCount).first { DSUMAC(slot: $0) == self } }
}

/// A client's request, checked.
enum DSURequest: Equatable {
    /// The pads a pad-data request subscribes to.
    struct Subscription: Hashable {
        /// Every pad (flags 0).
        var allPads = false
        var slot: Int?
        var mac: DSUMAC?
    }

    case version
    /// Port information for these slots (each below 4; in the order asked).
    case portInformation(slots: [Int])
    case padData(Subscription)

    /// Why a datagram was dropped: the metrics' `reason` label.
    enum Problem: String, Error {
        case tooShort = "too_short"
        case badMagic = "bad_magic"
        case badVersion = "bad_version"
        case badLength = "bad_length"
        case badCRC = "bad_crc"
        case badBody = "bad_body"
        case unknownType = "unknown_type"
        case tooManyClients = "too_many_clients"
        /// From UDP port 0, where no reply can go (sending to it fails with `EINVAL`).
        case sourcePortZero = "source_port_zero"
        /// Its source already holds `maximum_clients_per_source` leases.
        case tooManyFromSource = "too_many_from_source"
        /// From this machine, by a socket whose owner may not use motiond's socket, or none
        /// (`require_motion_group`).
        case notPermitted = "not_permitted"
    }

    /// Checks a client's datagram: its header (magic, version, a length it holds, the CRC over that
    /// length) and its body. Bytes beyond the length are ignored (the specification: "truncate if it's
    /// too long").
    init(datagram: ByteBuffer) throws(Problem) {
        var buffer = datagram
        guard buffer.readableBytes >= DSUWire.minimumSize else { throw .tooShort }
        guard buffer.readInteger(endianness: .little, as: UInt32.self) == DSUWire.clientMagic else { throw .badMagic }
        guard buffer.readInteger(endianness: .little, as: UInt16.self) == DSUWire.protocolVersion else { throw .badVersion }
        let length = Int(buffer.readInteger(endianness: .little, as: UInt16.self)!)
        guard length >= 4, DSUWire.headerSize + length <= datagram.readableBytes else { throw .badLength }
        let crc = buffer.readInteger(endianness: .little, as: UInt32.self)!
        guard datagram.withUnsafeReadableBytes({ DSUWire.packetCRC($0, size: DSUWire.headerSize + length) }) == crc else { throw .badCRC }
        buffer.moveReaderIndex(forwardBy: 4)  // the client's id
        let rawType = buffer.readInteger(endianness: .little, as: UInt32.self)!
        var body = buffer.readSlice(length: length - 4)!
        switch DSUWire.MessageType(rawValue: rawType) {
        case .version: self = .version
        case .portInformation:
            guard let count = body.readInteger(endianness: .little, as: Int32.self), (1...4).contains(count),
                let slots = body.readBytes(length: Int(count))
            else { throw .badBody }
            self = .portInformation(slots: slots.map(Int.init).filter { $0 < DSUWire.slotCount })
        case .padData:
            guard let flags = body.readInteger(as: UInt8.self), let slot = body.readInteger(as: UInt8.self),
                let high = body.readInteger(endianness: .big, as: UInt16.self), let low = body.readInteger(endianness: .big, as: UInt32.self)
            else { throw .badBody }
            var subscription = Subscription()
            if flags & 0b11 == 0 { subscription.allPads = true }
            if flags & 1 != 0 { subscription.slot = Int(slot) }
            if flags & 2 != 0 { subscription.mac = DSUMAC(value: UInt64(high) << 32 | UInt64(low)) }
            self = .padData(subscription)
        case nil: throw .unknownType
        }
    }
}

/// A pad as the server reports it: its slot's shared beginning (docs/games.md).
struct DSUPad: Equatable {
    enum Model: UInt8 {
        /// An accelerometer alone.
        case partialGyroscope = 1
        case fullGyroscope = 2
    }

    var slot: Int
    var model: Model
    var mac: DSUMAC { DSUMAC(slot: slot) }
}

/// Writes the server's packets, each with its header and CRC.
struct DSUPacketWriter {
    /// The server's id, random, fixed for the run.
    let serverID: UInt32
    private let allocator = ByteBufferAllocator()

    init(serverID: UInt32 = .random(in: .min ... .max)) {
        self.serverID = serverID
    }

    /// The answer to a version request.
    func version() -> ByteBuffer {
        var buffer = begin(.version)
        buffer.writeInteger(DSUWire.protocolVersion, endianness: .little)
        return finish(buffer, .version)
    }

    /// Port information for `slot`: `pad` there, or not connected (the slot and zeros).
    func portInformation(slot: Int, pad: DSUPad?) -> ByteBuffer {
        var buffer = begin(.portInformation)
        writeBeginning(&buffer, slot: slot, pad: pad)
        buffer.writeInteger(UInt8(0))
        return finish(buffer, .portInformation)
    }

    /// A pad-data packet of `pad`, written into `buffer` (cleared first; its storage is reused when
    /// nothing else holds it). `acceleration` in g and `rotationRate` in °/s, on the DSU's axes.
    func padData(
        into buffer: inout ByteBuffer, pad: DSUPad, packetNumber: UInt32, timestamp microseconds: UInt64,
        acceleration: (x: Float, y: Float, z: Float), rotationRate: (pitch: Float, yaw: Float, roll: Float)
    ) {
        buffer.clear()
        writeHeader(&buffer, .padData)
        writeBeginning(&buffer, slot: pad.slot, pad: pad)
        buffer.writeInteger(UInt8(1))  // connected
        buffer.writeInteger(packetNumber, endianness: .little)
        buffer.writeRepeatingByte(0, count: 4)  // buttons, PS, touch button: released
        buffer.writeRepeatingByte(128, count: 4)  // sticks: neutral
        buffer.writeRepeatingByte(0, count: 12 + 12)  // analog buttons, two touches: none
        buffer.writeInteger(microseconds, endianness: .little)
        // One write each, not a loop over an array: this runs per sample and allocates nothing.
        buffer.writeInteger(acceleration.x.bitPattern, endianness: .little)
        buffer.writeInteger(acceleration.y.bitPattern, endianness: .little)
        buffer.writeInteger(acceleration.z.bitPattern, endianness: .little)
        buffer.writeInteger(rotationRate.pitch.bitPattern, endianness: .little)
        buffer.writeInteger(rotationRate.yaw.bitPattern, endianness: .little)
        buffer.writeInteger(rotationRate.roll.bitPattern, endianness: .little)
        sign(&buffer)
    }

    private func begin(_ type: DSUWire.MessageType) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: type.replySize)
        writeHeader(&buffer, type)
        return buffer
    }

    private func writeHeader(_ buffer: inout ByteBuffer, _ type: DSUWire.MessageType) {
        buffer.writeInteger(DSUWire.serverMagic, endianness: .little)
        buffer.writeInteger(DSUWire.protocolVersion, endianness: .little)
        buffer.writeInteger(UInt16(type.replySize - DSUWire.headerSize), endianness: .little)
        buffer.writeInteger(UInt32(0), endianness: .little)  // the CRC, once the rest is written
        buffer.writeInteger(serverID, endianness: .little)
        buffer.writeInteger(type.rawValue, endianness: .little)
    }

    private func writeBeginning(_ buffer: inout ByteBuffer, slot: Int, pad: DSUPad?) {
        buffer.writeInteger(UInt8(slot))
        guard let pad else {
            buffer.writeRepeatingByte(0, count: 10)
            return
        }
        buffer.writeInteger(UInt8(2))  // connected
        buffer.writeInteger(pad.model.rawValue)
        buffer.writeInteger(UInt8(1))  // USB: a built-in IMU is wired
        // Six bytes, most significant first: the top two of the value's eight are not the MAC's.
        buffer.writeInteger(UInt16(truncatingIfNeeded: pad.mac.value >> 32), endianness: .big)
        buffer.writeInteger(UInt32(truncatingIfNeeded: pad.mac.value), endianness: .big)
        buffer.writeInteger(UInt8(0))  // battery: not applicable
    }

    private func finish(_ buffer: ByteBuffer, _ type: DSUWire.MessageType) -> ByteBuffer {
        var buffer = buffer
        precondition(buffer.readableBytes == type.replySize)
        sign(&buffer)
        return buffer
    }

    private func sign(_ buffer: inout ByteBuffer) {
        let crc = buffer.withUnsafeReadableBytes { DSUWire.crc32($0) }
        buffer.setInteger(crc, at: buffer.readerIndex + 8, endianness: .little)
    }
}

extension UInt32 {
    /// The little-endian integer that four ASCII characters make (`"DSUC"`: its bytes in that order).
    fileprivate init(ascii text: StaticString) {
        precondition(text.utf8CodeUnitCount == 4)
        let bytes = UnsafeBufferPointer(start: text.utf8Start, count: 4)
        self = bytes.reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }
}
