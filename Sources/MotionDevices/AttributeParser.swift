#if canImport(Glibc)
import Glibc
#endif
import MotionCore

/// Parsers for the text of sysfs attributes and udev properties.
///
/// Real sysfs values end in a newline; these accept surrounding whitespace and nothing else.
enum AttributeParser {
    /// Parses one decimal number (`-123`, `0.000598`, `1e-3`) from raw bytes, without allocating.
    /// Returns `nil` for empty text, garbage, or a value that is not finite.
    static func number(_ bytes: UnsafeRawBufferPointer) -> Double? {
        var start = 0
        var end = bytes.count
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) || bytes[end - 1] == 0 { end -= 1 }
        let length = end - start
        guard length > 0, length < 64 else { return nil }
        for i in start..<end where !isNumberByte(bytes[i]) { return nil }
        // strtod needs a terminated string; a stack buffer keeps this allocation-free.
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { text -> Double? in
            for i in 0..<length { text[i] = CChar(bitPattern: bytes[start + i]) }
            text[length] = 0
            var parsedEnd: UnsafeMutablePointer<CChar>? = nil
            let value = strtod(text.baseAddress!, &parsedEnd)
            guard let parsedEnd, parsedEnd - text.baseAddress! == length, value.isFinite else { return nil }
            return value
        }
    }

    /// Parses one decimal number from text.
    static func number(_ text: String) -> Double? {
        var copy = text
        return copy.withUTF8 { number(UnsafeRawBufferPointer($0)) }
    }

    /// Parses a mount matrix, `x1, y1, z1; x2, y2, z2; x3, y3, z3` (IIO's and systemd hwdb's format).
    /// Rejects anything but nine finite numbers in three rows (whether it is a usable rotation is
    /// `DeviceFrame`'s to judge: the hwdb has matrices whose z row repeats another).
    static func mountMatrix(_ text: String) -> Matrix3? {
        let rows = text.trimmingWhitespace.split(separator: ";", omittingEmptySubsequences: false)
        guard rows.count == 3 else { return nil }
        var values: [Double] = []
        for row in rows {
            let cells = row.split(separator: ",", omittingEmptySubsequences: false)
            guard cells.count == 3 else { return nil }
            for cell in cells {
                guard let v = number(String(cell)) else { return nil }
                values.append(v)
            }
        }
        return Matrix3(rowMajor: values)
    }

    /// Parses `sampling_frequency_available`: a list (`12.5 25 50 100`) or a range (`[min step max]`),
    /// in Hz. A rate outside `PlausibleRate.hertz` makes the whole attribute malformed: a device
    /// that lists a rate no chip runs at is not trusted with the others.
    static func availableRates(_ text: String) -> AvailableRates? {
        let trimmed = text.trimmingWhitespace
        if trimmed.hasPrefix("[") && trimmed.hasSuffix("]") {
            let parts = trimmed.dropFirst().dropLast().split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard parts.count == 3,
                let low = rate(String(parts[0])), let step = number(String(parts[1])),
                let high = rate(String(parts[2])), step > 0, high >= low
            else { return nil }
            return .range(minimum: low, step: step, maximum: high)
        }
        let parts = trimmed.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard !parts.isEmpty else { return nil }
        var rates: [Double] = []
        for part in parts {
            guard let v = rate(String(part)) else { return nil }
            rates.append(v)
        }
        return .list(rates.sorted())
    }

    /// Parses one sampling rate (`sampling_frequency`), Hz; `nil` for text that is no number or a
    /// rate outside `PlausibleRate.hertz`.
    static func rate(_ text: String) -> Double? {
        number(text).flatMap { PlausibleRate.hertz.contains($0) ? $0 : nil }
    }

    /// Parses a scan element type, `[be|le]:[s|u|S|U]bits/storage[Xrepeat][>>shift]`
    /// (Documentation/ABI/testing/sysfs-bus-iio). Returns `nil` for anything this code cannot decode:
    /// storage other than 8, 16, 32 or 64 bits, bits wider than storage, repeats.
    static func scanType(_ text: String) -> ScanType? {
        let t = Array(text.trimmingWhitespace.utf8)
        var i = 0
        func take(_ s: String) -> Bool {
            let b = Array(s.utf8)
            guard t.count - i >= b.count, Array(t[i..<(i + b.count)]) == b else { return false }
            i += b.count
            return true
        }
        func integer() -> Int? {
            var v = 0
            let s = i
            while i < t.count, t[i] >= 48, t[i] <= 57, i - s < 4 {
                v = v * 10 + Int(t[i] - 48)
                i += 1
            }
            return i > s ? v : nil
        }
        let bigEndian: Bool
        if take("be:") { bigEndian = true } else if take("le:") { bigEndian = false } else { return nil }
        guard i < t.count else { return nil }
        let signed: Bool
        switch t[i] {
        case UInt8(ascii: "s"), UInt8(ascii: "S"): signed = true
        case UInt8(ascii: "u"), UInt8(ascii: "U"): signed = false
        default: return nil
        }
        i += 1
        guard let bits = integer(), take("/"), let storage = integer() else { return nil }
        if i < t.count, t[i] == UInt8(ascii: "X") { return nil }  // repeated channels are not motion data
        var shift = 0
        if take(">>") {
            guard let s = integer() else { return nil }
            shift = s
        }
        guard i == t.count, [8, 16, 32, 64].contains(storage), bits >= 1, bits + shift <= storage else {
            return nil
        }
        return ScanType(
            isBigEndian: bigEndian, isSigned: signed, bits: UInt8(bits),
            storageBits: UInt8(storage), shift: UInt8(shift))
    }

    @inline(__always)
    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x09 || b == 0x0D }

    @inline(__always)
    private static func isNumberByte(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || b == 0x2D || b == 0x2B || b == 0x2E || b == 0x65 || b == 0x45
    }
}

/// The sampling rates a device offers (`sampling_frequency_available`), in Hz.
public enum AvailableRates: Sendable, Hashable, Codable {
    /// A list of discrete rates, ascending.
    case list([Double])
    /// Every rate from `minimum` to `maximum` in steps of `step`.
    case range(minimum: Double, step: Double, maximum: Double)

    /// The lowest offered rate that is at least `requested` Hz, or the highest offered if none is;
    /// within `PlausibleRate.hertz` also where the rates did not come through the parser.
    public func rate(atLeast requested: Double) -> Double {
        switch self {
        case .list(let rates):
            return PlausibleRate.clamped(rates.first(where: { $0 >= requested - 1e-9 }) ?? rates.last ?? requested)
        case .range(let low, let step, let high):
            if requested <= low { return PlausibleRate.clamped(low) }
            let steps = ((requested - low) / step - 1e-9).rounded(.up)
            // A step too small to count in (steps infinite, or NaN times 0) leaves the rate asked for.
            let offered = low + steps * step
            return PlausibleRate.clamped(min(high, offered.isFinite ? offered : requested))
        }
    }
}

extension StringProtocol where SubSequence == Substring {
    var trimmingWhitespace: Substring {
        let s: Substring = self[...]
        guard let first = s.firstIndex(where: { !$0.isWhitespace }) else { return s[s.endIndex...] }
        let last = s.lastIndex(where: { !$0.isWhitespace })!
        return Substring(s[first...last])
    }
}

extension DeviceDescriptor {
    /// The rate the device itself is set to for a capture asking `requested` Hz: the lowest it offers
    /// that is at least that (its highest if none is), or `requested` where it lists none; always
    /// within `PlausibleRate.hertz`.
    public func hardwareRate(for requested: Double) -> Double {
        availableRates?.rate(atLeast: requested) ?? PlausibleRate.clamped(requested)
    }

    /// The rate a capture asking `requested` Hz delivers samples at, read in `mode`: a buffer's, the
    /// device's own (`hardwareRate`); a poll's, what was asked, no faster than the device. An
    /// orientation's 4 Hz on an accelerometer whose slowest rate is 15.62 Hz is then 4 reads a second,
    /// not 16 (docs/protocol.md: polled sensors are read 4 times a second for event streams).
    public func captureRate(for requested: Double, in mode: CaptureMode) -> Double {
        mode == .buffered ? hardwareRate(for: requested) : PlausibleRate.clamped(min(requested, hardwareRate(for: requested)))
    }
}
