/// How one channel is laid out in a buffered scan (`scan_elements/in_*_type`).
public struct ScanType: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Byte order of the storage word.
    public var isBigEndian: Bool
    /// Whether the value is two's complement.
    public var isSigned: Bool
    /// Significant bits of the value.
    public var bits: UInt8
    /// Bits of storage the value occupies in the scan (8, 16, 32 or 64).
    public var storageBits: UInt8
    /// Right shift to apply to the storage word before masking to `bits`.
    public var shift: UInt8

    /// Creates a scan type; see the properties for meanings.
    public init(isBigEndian: Bool, isSigned: Bool, bits: UInt8, storageBits: UInt8, shift: UInt8) {
        self.isBigEndian = isBigEndian
        self.isSigned = isSigned
        self.bits = bits
        self.storageBits = storageBits
        self.shift = shift
    }

    /// Bytes of storage in the scan.
    public var storageBytes: Int { Int(storageBits) / 8 }

    /// The kernel's spelling, e.g. `le:s12/16>>4`.
    public var description: String {
        "\(isBigEndian ? "be" : "le"):\(isSigned ? "s" : "u")\(bits)/\(storageBits)>>\(shift)"
    }

    /// Decodes the value stored at `pointer`: byte order, shift, mask to `bits`, sign extension.
    @inlinable
    public func decode(_ pointer: UnsafeRawPointer) -> Int64 {
        var word: UInt64
        switch storageBits {
        case 8:
            word = UInt64(pointer.load(as: UInt8.self))
        case 16:
            let v = pointer.loadUnaligned(as: UInt16.self)
            word = UInt64(isBigEndian ? UInt16(bigEndian: v) : UInt16(littleEndian: v))
        case 32:
            let v = pointer.loadUnaligned(as: UInt32.self)
            word = UInt64(isBigEndian ? UInt32(bigEndian: v) : UInt32(littleEndian: v))
        default:
            let v = pointer.loadUnaligned(as: UInt64.self)
            word = isBigEndian ? UInt64(bigEndian: v) : UInt64(littleEndian: v)
        }
        word >>= UInt64(shift)
        if bits < 64 {
            word &= (UInt64(1) << UInt64(bits)) &- 1
            if isSigned {
                let signBit = UInt64(1) << UInt64(bits - 1)
                if word & signBit != 0 { word |= ~((UInt64(1) << UInt64(bits)) &- 1) }
            }
        }
        return Int64(bitPattern: word)
    }
}
