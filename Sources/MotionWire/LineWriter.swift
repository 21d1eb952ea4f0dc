import MotionCore

#if canImport(Glibc)
import Glibc
#endif

/// Writes the per-sample messages (`MOTION`, `ACCELEROMETER`, `GYROSCOPE`, `MAGNETOMETER`) as JSON
/// lines by hand, into a buffer made once and reused.
///
/// Why not `JSONEncoder`: it costs about 0.2 ms and dozens of allocations for one `MOTION` line
/// (measured with `daemon-load`), several times more than the whole fusion step. The lines carry the
/// same keys as `Wire.encode` in the order docs/protocol.md shows, and decode to the same message;
/// numbers are written to 9 significant digits (sensors give at most 24 bits), timestamps exactly.
public struct LineWriter: Sendable {
    /// The line written so far.
    public private(set) var bytes: [UInt8] = []

    /// A writer whose buffer holds `capacity` bytes before it grows.
    public init(capacity: Int = 1024) { bytes.reserveCapacity(capacity) }

    /// Writes `message` as one line, `\n` included, replacing what was written before.
    public mutating func write(_ message: MotionMessage) {
        begin(MotionMessage.self, timestamp: message.timestamp)
        raw(#","frame":""#)
        raw(message.frame.rawValue)
        raw(#"","attitude":{"quaternion":"#)
        let q = message.attitude.quaternion
        xyz(q.x, q.y, q.z, w: q.w)
        raw(#","roll":"#)
        number(message.attitude.roll)
        raw(#","pitch":"#)
        number(message.attitude.pitch)
        raw(#","yaw":"#)
        number(message.attitude.yaw)
        raw(#","rotation_matrix":["#)
        let m = message.attitude.rotationMatrix
        row(m.row0)
        bytes.append(UInt8(ascii: ","))
        row(m.row1)
        bytes.append(UInt8(ascii: ","))
        row(m.row2)
        raw("]}")
        vector(#","gravity":"#, message.gravity)
        vector(#","user_acceleration":"#, message.userAcceleration)
        vector(#","rotation_rate":"#, message.rotationRate)
        vector(#","magnetic_field":{"field":"#, message.magneticField.field)
        raw(#","accuracy":""#)
        raw(message.magneticField.accuracy.rawValue)
        raw(#""}"#)
        if let heading = message.heading {
            raw(#","heading":"#)
            number(heading)
        }
        if let unavailable = message.unavailable, !unavailable.isEmpty {
            raw(#","unavailable":{"#)
            var first = true
            for entry in UnavailableOutputs.explained where unavailable.contains(entry.member) {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                bytes.append(UInt8(ascii: "\""))
                raw(entry.name)
                raw(#"":""#)
                raw(entry.reason)
                bytes.append(UInt8(ascii: "\""))
            }
            raw("}")
        }
        end()
    }

    /// Writes `message` as one line, replacing what was written before.
    public mutating func write(_ message: HingeMessage) {
        begin(HingeMessage.self, timestamp: message.timestamp)
        raw(#","angle":"#)
        number(message.angle)
        raw(#","mode":""#)
        raw(message.mode.rawValue)
        raw(#"""#)
        if let display = message.display { vector(#","display":"#, display) }
        if let base = message.base { vector(#","base":"#, base) }
        end()
    }

    /// Writes `message` as one line, replacing what was written before.
    public mutating func write(_ message: AccelerometerMessage) {
        begin(AccelerometerMessage.self, timestamp: message.timestamp)
        vector(#","acceleration":"#, message.acceleration)
        end()
    }

    /// Writes `message` as one line, replacing what was written before.
    public mutating func write(_ message: GyroscopeMessage) {
        begin(GyroscopeMessage.self, timestamp: message.timestamp)
        vector(#","rotation_rate":"#, message.rotationRate)
        end()
    }

    /// Writes `message` as one line, replacing what was written before.
    public mutating func write(_ message: MagnetometerMessage) {
        begin(MagnetometerMessage.self, timestamp: message.timestamp)
        vector(#","magnetic_field":"#, message.magneticField)
        end()
    }

    /// Writes `message` as one line, replacing what was written before.
    public mutating func write(_ message: AltitudeMessage) {
        begin(AltitudeMessage.self, timestamp: message.timestamp)
        raw(#","pressure":"#)
        number(message.pressure)
        raw(#","altitude":"#)
        number(message.altitude)
        if let precision = message.precision {
            raw(#","precision":"#)
            number(precision)
        }
        end()
    }

    /// Writes `message` as one line if it is of a class written by hand (the per-sample ones and
    /// `HISTORY`), replacing what was written before; returns `false`, writing nothing, for any other.
    public mutating func write(_ message: AnyServerMessage) -> Bool {
        switch message {
        case .motion(let m): write(m)
        case .accelerometer(let m): write(m)
        case .gyroscope(let m): write(m)
        case .magnetometer(let m): write(m)
        case .hinge(let m): write(m)
        case .altitude(let m): write(m)
        case .history(let m): write(m)
        default: return false
        }
        return true
    }

    /// Writes `reply` as one line, replacing what was written before: its keys in `Wire.encode`'s
    /// order, its times in the shortest form that reads back to the same `Double` (seconds of Unix
    /// time need 10 digits and their fraction, more than `number`'s 9).
    ///
    /// By hand for the same reason as the samples: a week's 1,024 activities are 72 KB, which
    /// `JSONEncoder` took some 6 ms to write on the event loop; 40 clients asking at once stalled
    /// every stream for 1.8 s.
    public mutating func write(_ reply: HistoryReply) {
        bytes.removeAll(keepingCapacity: true)
        raw(#"{"class":""#)
        raw(HistoryReply.className)
        raw(#"""#)
        if let id = reply.id {
            raw(#","id":"#)
            switch id {
            case .integer(let value): integer(value)
            case .number(let value): exact(value)
            case .string(let text): string(text)
            }
        }
        raw(#","stream":""#)
        raw(reply.stream.rawValue)
        raw(#"","from":"#)
        exact(reply.from)
        raw(#","to":"#)
        exact(reply.to)
        if let steps = reply.steps {
            raw(#","steps":"#)
            integer(Int64(steps))
        }
        if let distance = reply.distance {
            raw(#","distance":"#)
            exact(distance)
        }
        if let activities = reply.activities {
            raw(#","activities":["#)
            for (index, entry) in activities.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                raw(#"{"activity":""#)
                raw(entry.activity.rawValue)
                raw(#"","confidence":""#)
                raw(entry.confidence.rawValue)
                raw(#"","start":"#)
                exact(entry.start)
                raw("}")
            }
            raw("]")
        }
        if let truncated = reply.truncated { raw(truncated ? #","truncated":true"# : #","truncated":false"#) }
        end()
    }

    private mutating func begin<M: ServerMessage>(_ type: M.Type, timestamp: Int64) {
        bytes.removeAll(keepingCapacity: true)
        raw(#"{"class":""#)
        raw(M.className)
        raw(#"","timestamp":"#)
        integer(timestamp)
    }

    private mutating func end() { raw("}\n") }

    private mutating func vector(_ key: StaticString, _ v: Vector3) {
        raw(key)
        xyz(v.x, v.y, v.z)
    }

    /// `{"x":…,"y":…,"z":…}`, with `"w":…` last when given (a quaternion).
    private mutating func xyz(_ x: Double, _ y: Double, _ z: Double, w: Double? = nil) {
        raw(#"{"x":"#)
        number(x)
        raw(#","y":"#)
        number(y)
        raw(#","z":"#)
        number(z)
        if let w {
            raw(#","w":"#)
            number(w)
        }
        raw("}")
    }

    /// A matrix row: `x,y,z`.
    private mutating func row(_ v: Vector3) {
        number(v.x)
        bytes.append(UInt8(ascii: ","))
        number(v.y)
        bytes.append(UInt8(ascii: ","))
        number(v.z)
    }

    private mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    private mutating func raw(_ text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// A JSON number that reads back to exactly `value` (Swift's shortest form); `null` when not finite.
    private mutating func exact(_ value: Double) {
        guard value.isFinite else { return raw("null") }
        raw(value.description)
    }

    /// A JSON string: `"` and `\` escaped, control characters as `\u00XX`, the rest as UTF-8.
    private mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(byte)
            case 0..<0x20:
                raw("\\u00")
                let hex: StaticString = "0123456789abcdef"
                bytes.append(hex.utf8Start[Int(byte >> 4)])
                bytes.append(hex.utf8Start[Int(byte & 0xF)])
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// A decimal integer.
    mutating func integer(_ value: Int64) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        digits(value.magnitude, count: nil)
    }

    /// The digits of `value`, left-padded with zeros to `count` when given.
    private mutating func digits(_ value: UInt64, count: Int?) {
        var scratch: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for 20 digits
        withUnsafeMutableBytes(of: &scratch) { buffer in
            var v = value, n = 0
            repeat {
                buffer[23 - n] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
                n += 1
            } while v > 0 || n < (count ?? 1)
            bytes.append(contentsOf: buffer[(24 - n)...])
        }
    }

    private static let powersOfTen: [Double] = (0...22).map { pow(10, Double($0)) }

    /// A JSON number with 9 significant digits: plain decimals from 1e-5 to 1e15, exponent form
    /// beyond, subnormals included. Not-a-number and infinities, which JSON cannot carry, are written
    /// as `null`: never as a number nobody measured.
    mutating func number(_ value: Double) {
        guard value.isFinite else {
            raw("null")
            return
        }
        guard value != 0 else {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        let magnitude = value.magnitude
        let exponent = Int(log10(magnitude).rounded(.down))
        if (-5...14).contains(exponent) {
            let decimals = max(0, 8 - exponent)
            let scaled = UInt64((magnitude * Self.powersOfTen[decimals]).rounded())
            let unit = UInt64(Self.powersOfTen[decimals])
            digits(scaled / unit, count: nil)
            var fraction = scaled % unit, width = decimals
            guard fraction > 0 else { return }
            while fraction % 10 == 0 {
                fraction /= 10
                width -= 1
            }
            bytes.append(UInt8(ascii: "."))
            digits(fraction, count: width)
        } else {
            // d.dddddddd e±x, the mantissa rounded to 9 digits.
            var (mantissa, e) = Self.mantissa(magnitude, exponent: exponent)
            if mantissa < 100_000_000 { (mantissa, e) = Self.mantissa(magnitude, exponent: exponent - 1) }  // log10 rounded up
            if mantissa >= 1_000_000_000 {
                mantissa /= 10
                e += 1
            }
            digits(mantissa / 100_000_000, count: nil)
            var fraction = mantissa % 100_000_000, width = 8
            if fraction > 0 {
                while fraction % 10 == 0 {
                    fraction /= 10
                    width -= 1
                }
                bytes.append(UInt8(ascii: "."))
                digits(fraction, count: width)
            }
            bytes.append(UInt8(ascii: "e"))
            integer(Int64(e))
        }
    }

    /// `magnitude / 10^(exponent − 8)` rounded: 9 digits when `exponent` is the decimal exponent.
    /// Below 1e-290 the magnitude is first scaled up, as 10^(exponent − 8) would underflow to 0 there.
    private static func mantissa(_ magnitude: Double, exponent: Int) -> (UInt64, Int) {
        let value = exponent < -290 ? magnitude * 1e300 / pow(10, Double(exponent + 300 - 8)) : magnitude / pow(10, Double(exponent - 8))
        return (UInt64(value.rounded()), exponent)
    }
}
