import Foundation
import MotionCore
import Testing

@testable import MotionWire

@Suite struct LineWriterTests {
    /// Random values over every magnitude the daemon may meet, both signs.
    static func randomValues(count: Int) -> [Double] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in
            let value = Double.random(in: 1...10, using: &generator) * pow(10, Double(Int.random(in: -14...17, using: &generator)))
            return Bool.random(using: &generator) ? value : -value
        }
    }

    @Test func numbersReadBackAsPrintfsNineDigitsDo() throws {
        var writer = LineWriter()
        for value in Self.randomValues(count: 5000) + [1, 10, 1000, 1e-5, 0.1, 123_456_789, 0.5, -2.75, 1e15, 9.999999999e-6] {
            writer.number(value)
            let text = String(decoding: writer.bytes, as: UTF8.self)
            let parsed = try #require(Double(text), "\(value) → \(text)")
            // The reference: C's %.9g, an independent formatter.
            let reference = Double(String(format: "%.9g", value))!
            #expect(parsed == reference || (parsed - value).magnitude <= 5e-9 * value.magnitude, "\(value) → \(text), %.9g: \(reference)")
            #expect(!text.contains("+") && !text.hasSuffix("."), "JSON's number grammar: \(text)")
            _ = try JSONSerialization.jsonObject(with: Data(("[" + text + "]").utf8))
            writer = LineWriter()
        }
    }

    @Test func notFiniteNumbersAreWrittenAsNullNeverAsAMadeUpZero() {
        let written = [Double.nan, .infinity, -.infinity, -0.0].map { value in
            var writer = LineWriter()
            writer.number(value)
            return String(decoding: writer.bytes, as: UTF8.self)
        }
        #expect(written == ["null", "null", "null", "0"])
    }

    /// Every finite Double, subnormals included (the writer used to trap below about 1e-315 and print
    /// wrong digits near 1e-310), against Swift's own shortest round-trip formatting: where that
    /// needs at most 9 significant digits, ours must read back as the very same Double; otherwise
    /// within 9 digits' rounding (or, for a subnormal, within its own spacing).
    @Test func everyFiniteDoubleReadsBackAsSwiftsShortestFormDoes() throws {
        var generator = SystemRandomNumberGenerator()
        let edges: [Double] = [
            .leastNonzeroMagnitude, .leastNormalMagnitude, .greatestFiniteMagnitude, Double("1e-310")!, Double("1e-315")!, Double("2.5e-320")!,
            .leastNormalMagnitude.nextDown, 9.99999999e-300, 1e-291, 1e-290, 1e15, 1e-5, 0.1, 123_456_789,
        ]
        let random = (0..<20_000).map { _ in Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &generator)) }
        var checked = 0
        for value in (edges + edges.map { -$0 } + random) where value.isFinite {
            var writer = LineWriter()
            writer.number(value)
            let text = String(decoding: writer.bytes, as: UTF8.self)
            let parsed = try #require(Double(text), "\(value) → \(text)")
            let shortest = value.description  // Swift's: the shortest digits that read back exactly
            let significant = shortest.split(separator: "e")[0].filter(\.isNumber).drop { $0 == "0" }.count
            if significant <= 9 {
                #expect(parsed == value, "\(shortest) → \(text)")
            } else {
                #expect((parsed - value).magnitude <= max(5e-9 * value.magnitude, value.ulp), "\(shortest) → \(text)")
            }
            #expect(!text.contains("+") && !text.hasSuffix("."), "JSON's number grammar: \(text)")
            checked += 1
        }
        #expect(checked > 19_000)
    }

    @Test func timestampsAreExactIntegers() {
        for value: Int64 in [0, 7, -12, 1_234_567_890_123_456_789, .max, .min + 1] {
            var writer = LineWriter()
            writer.integer(value)
            #expect(String(decoding: writer.bytes, as: UTF8.self) == String(value))
        }
    }

    static let motion = MotionMessage(
        timestamp: 5_010_000_000, frame: .xMagneticNorthZVertical,
        attitude: AttitudeMessage(
            quaternion: Quaternion(w: 0.7071068, x: 0.001, y: -0.0002, z: -0.7071068), roll: 0.0021, pitch: -0.0013, yaw: -1.5707963,
            rotationMatrix: Matrix3(rowMajor: [0, -1, 0.000012, 1, 0, 0, 0, 0.5, 1])),
        gravity: Vector3(x: 0.01, y: -0.02, z: -0.9998), userAcceleration: Vector3(x: 1e-7, y: 0, z: 3.25),
        rotationRate: Vector3(x: 0.01, y: 0, z: -12.5), magneticField: CalibratedFieldMessage(field: Vector3(x: 0, y: 19.25, z: -46), accuracy: .high),
        heading: 359.5)

    @Test func aMotionLineDecodesToTheMessageWithItsKeysInTheDocumentedOrder() throws {
        var writer = LineWriter()
        writer.write(Self.motion)
        let line = writer.bytes
        #expect(line.last == UInt8(ascii: "\n"))
        #expect(try Wire.decode(MotionMessage.self, from: Array(line.dropLast())) == Self.motion)
        let text = String(decoding: line, as: UTF8.self)
        #expect(text.hasPrefix(#"{"class":"MOTION","timestamp":5010000000,"frame":"xMagneticNorthZVertical","attitude":{"quaternion":{"x":0.001,"#), "\(text)")
        // The same line as the general encoder writes, up to the order of keys.
        let general = try JSONSerialization.jsonObject(with: Data(try Wire.encode(Self.motion))) as! NSDictionary
        #expect(try JSONSerialization.jsonObject(with: Data(line)) as! NSDictionary == general)

        var withoutHeading = Self.motion
        withoutHeading.heading = nil
        writer.write(withoutHeading)
        #expect(!String(decoding: writer.bytes, as: UTF8.self).contains("heading"), "no heading outside the north frames, as Wire.encode")
        #expect(try Wire.decode(MotionMessage.self, from: writer.bytes) == withoutHeading)
    }

    @Test func aRotationMatrixOfOtherThanNineNumbersIsADecodingErrorNotACrash() throws {
        var writer = LineWriter()
        writer.write(Self.motion)
        let line = String(decoding: writer.bytes, as: UTF8.self).replacingOccurrences(of: #""rotation_matrix":[0,"#, with: #""rotation_matrix":["#)
        #expect(throws: DecodingError.self) { try Wire.decode(MotionMessage.self, from: Array(line.utf8)) }
    }

    @Test func rawSensorLinesDecodeToTheirMessages() throws {
        var writer = LineWriter()
        let accelerometer = AccelerometerMessage(timestamp: 1, acceleration: Vector3(x: -0.25, y: 0.125, z: -1.0009765))
        writer.write(accelerometer)
        #expect(try Wire.decode(AccelerometerMessage.self, from: writer.bytes) == accelerometer)
        let gyroscope = GyroscopeMessage(timestamp: 2, rotationRate: Vector3(x: 0.001065, y: -0.00213, z: 34.9))
        writer.write(gyroscope)
        #expect(try Wire.decode(GyroscopeMessage.self, from: writer.bytes) == gyroscope)
        let magnetometer = MagnetometerMessage(timestamp: 3, magneticField: Vector3(x: 12.5, y: -40.75, z: 3))
        writer.write(magnetometer)
        #expect(try Wire.decode(MagnetometerMessage.self, from: writer.bytes) == magnetometer)
        #expect(Wire.className(of: Array(writer.bytes.dropLast())) == "MAGNETOMETER")
    }

    /// Protocol 1.9: a HINGE line carries the two accelerometers' readings where the daemon gives them, and
    /// a line from an older daemon, without them, still decodes (the fields are nil).
    @Test func aHingeLineCarriesTheReadingsItsAngleComesFromAndOneWithoutThemDecodes() throws {
        var writer = LineWriter()
        let hinge = HingeMessage(timestamp: 4, angle: 355.5, mode: .tablet, display: Vector3(x: 0.01, y: -0.25, z: -0.96875), base: Vector3(x: 0, y: -0.5, z: 0.75))
        writer.write(hinge)
        #expect(try Wire.decode(HingeMessage.self, from: writer.bytes) == hinge)
        let general = try JSONSerialization.jsonObject(with: Data(try Wire.encode(hinge))) as! NSDictionary
        #expect(try JSONSerialization.jsonObject(with: Data(writer.bytes)) as! NSDictionary == general)
        let older = Array(#"{"class":"HINGE","timestamp":4,"angle":112.5,"mode":"laptop"}"#.utf8)
        #expect(try Wire.decode(HingeMessage.self, from: older) == HingeMessage(timestamp: 4, angle: 112.5, mode: .laptop))
    }

    /// Issue 40, defect 3: a week's HISTORY, written by hand, decodes (with Foundation's JSONSerialization
    /// and the protocol's decoder, independent of the writer) to the very reply JSONEncoder writes:
    /// every start time exact to the bit, ids of every kind, a string id that needs escaping.
    @Test(arguments: [
        RequestID.integer(Int64.max), .number(0.1), .string(#"a "quoted" \ back\slash, a tab\t, a bell\u{7}, é"#), nil,
    ])
    func aHistoryReplyWrittenByHandDecodesToTheReply(id: RequestID?) throws {
        var generator = SystemRandomNumberGenerator()
        let activities = (0..<1024).map { i in
            HistoryReply.Activity(
                activity: MotionActivityKind.allCases[i % MotionActivityKind.allCases.count], confidence: .medium,
                start: 1_795_500_000 + Double.random(in: 0...604_800, using: &generator))
        }
        let replies = [
            HistoryReply(id: id, stream: .activity, from: 1_795_500_000.125, to: 1_796_104_800, activities: activities, truncated: true),
            HistoryReply(id: id, stream: .pedometer, from: 1e-7, to: 1_795_503_600.5, steps: 1042, distance: 734.6000000000001),
        ]
        for reply in replies {
            var writer = LineWriter()
            writer.write(reply)
            #expect(writer.bytes.last == UInt8(ascii: "\n"))
            _ = try JSONSerialization.jsonObject(with: Data(writer.bytes))
            #expect(try Wire.decode(HistoryReply.self, from: writer.bytes) == reply)
            #expect(try Wire.decode(HistoryReply.self, from: writer.bytes) == (try Wire.decode(HistoryReply.self, from: try Wire.encode(reply))))
        }
    }
}
