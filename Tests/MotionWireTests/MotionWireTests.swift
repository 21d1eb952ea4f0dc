import Foundation
import MotionCore
import Testing

@testable import MotionWire

@Suite struct LineFramerTests {
    /// The daemon's per-stream tables rely on it.
    @Test func aStreamKindsIndexIsItsPlaceAmongAllCases() {
        #expect(StreamKind.allCases.map(\.index) == Array(StreamKind.allCases.indices))
    }

    @Test func linesSplitAcrossChunksAreJoined() {
        var framer = LineFramer(maximumLength: 64)
        #expect(framer.feed(Array("{\"class\":".utf8)) == [])
        #expect(framer.feed(Array("\"STATUS\"}\n{\"a\"".utf8)) == [.line(Array("{\"class\":\"STATUS\"}".utf8))])
        #expect(framer.feed(Array(":1}\r\n\n".utf8)) == [.line(Array("{\"a\":1}".utf8)), .line([])])
    }

    @Test func anOversizedLineIsReportedOnceAndSkippedToItsEnd() {
        var framer = LineFramer(maximumLength: 16)
        let long = [UInt8](repeating: UInt8(ascii: "x"), count: 40)
        #expect(framer.feed(long) == [.tooLong])
        #expect(framer.feed(long) == [], "still the same line: nothing more")
        #expect(framer.feed(Array("yy\nok\n".utf8)) == [.line(Array("ok".utf8))])
        // Exactly at the limit (15 bytes + \n = 16) is accepted.
        let fits = [UInt8](repeating: UInt8(ascii: "a"), count: 15)
        #expect(framer.feed(fits + [10]) == [.line(fits)])
    }
}

extension LineFramerTests {
    /// Issue 40, defect 3: a server stops at the request that filled its client's queue; the bytes
    /// after it are the caller's, and fed again they give the same lines as one feed would.
    @Test func aFeedStoppedAtALineTakesTheBytesUpToItsEndOnly() {
        var framer = LineFramer(maximumLength: 64)
        let input = Array("a\nbb\nccc\n".utf8)
        var seen: [LineFramer.Item] = []
        let taken = framer.feed(input) { item in
            seen.append(item)
            return seen.count < 2
        }
        #expect(taken == 5 && seen == [.line(Array("a".utf8)), .line(Array("bb".utf8))])
        #expect(framer.feed(input[taken...]) == [.line(Array("ccc".utf8))])
    }

    /// 64 KB of `\n` (one read of an attacker's): each empty line used to keep `pending`'s reserved
    /// 4 KB of storage, which clearing `pending` then reallocated, so the read's items held
    /// 65,536 × 4 KB = 256 MB. Each line now owns storage of its own length.
    @Test func aReadOfShortLinesHoldsNoReservedBufferPerLine() {
        var framer = LineFramer()
        let items = framer.feed([UInt8](repeating: UInt8(ascii: "\n"), count: 65_536) + Array("{}\n".utf8))
        let lines = items.compactMap { if case .line(let line) = $0 { line } else { nil } }
        #expect(lines.count == 65_537)
        let reserved = lines.reduce(0) { $0 + $1.capacity }
        #expect(reserved < 1024, "\(reserved) bytes of line storage for 2 bytes of lines")
        #expect(lines.last == Array("{}".utf8))
    }
}

@Suite struct RequestTests {
    func decode(_ text: String) -> Result<Request, ErrorReply> { Request.decode(Array(text.utf8)) }

    /// Ids are echoed exactly: all of Int64 (2^53 + 1 used to come back as 2^53, ids being Doubles),
    /// fractions and strings as they were; an id of another type is named as the problem (it used to
    /// be "not a JSON object").
    @Test func requestIdsComeBackExactlyAndABadOneIsNamed() throws {
        #expect(try decode(#"{"class":"STATUS","id":9007199254740993}"#).get() == .status(id: .integer(9_007_199_254_740_993)))
        #expect(try decode(#"{"class":"STATUS","id":-9223372036854775808}"#).get() == .status(id: .integer(.min)))
        #expect(try decode(#"{"class":"STATUS","id":1.5}"#).get() == .status(id: .number(1.5)))
        #expect(try decode(#"{"class":"STATUS","id":"a"}"#).get() == .status(id: .string("a")))
        #expect(try decode(#"{"class":"STATUS","id":null}"#).get() == .status(id: nil))
        #expect(throws: ErrorReply(id: .integer(3), code: .malformed, message: "\"class\" must be a string")) {
            try decode(#"{"class":5,"id":3}"#).get()
        }
        let bad = decode(#"{"class":"STATUS","id":true}"#)
        #expect(throws: ErrorReply(id: nil, code: .malformed, message: "\"id\" must be a number or a string")) { try bad.get() }
        let reply = String(decoding: try Wire.encode(StatusReply(id: .integer(9_007_199_254_740_993), uptime: 1, clients: 1, sensors: [], dropped: 0, calibration: nil)), as: UTF8.self)
        #expect(reply.contains(#""id":9007199254740993"#), "\(reply)")
    }

    @Test func watchWithEveryFieldAndUnknownOnesIgnored() throws {
        let request = try decode(#"{"class":"WATCH","id":7,"streams":["motion","proximity"],"interval":0.02,"frame":"xTrueNorthZVertical","future":{"x":1}}"#).get()
        #expect(request == .watch(Request.Watch(id: .integer(7), streams: [.motion, .proximity], interval: 0.02, frame: .xTrueNorthZVertical)))
    }

    @Test func stopAllNeedsNoStreams() throws {
        #expect(try decode(#"{"class":"WATCH","enable":false}"#).get() == .watch(Request.Watch(streams: nil, enable: false)))
    }

    @Test func pollDevicesAndStatusKeepTheirIDs() throws {
        #expect(try decode(#"{"class":"POLL","id":"a","streams":["accelerometer"]}"#).get() == .poll(Request.Poll(id: .string("a"), streams: [.accelerometer])))
        #expect(try decode(#"{"class":"DEVICES","id":2}"#).get() == .devices(id: .integer(2)))
        #expect(try decode(#"{"class":"STATUS"}"#).get() == .status(id: nil))
    }

    @Test(arguments: [
        ("not json", ErrorCode.malformed),
        ("[1,2]", .malformed),
        (#"{"id":3}"#, .malformed),
        (#"{"class":"SPEED","id":4}"#, .unknownRequest),
        (#"{"class":"WATCH","streams":"motion"}"#, .malformed),
        (#"{"class":"WATCH","streams":["speed"]}"#, .invalidArgument),
        (#"{"class":"WATCH","streams":["motion"],"frame":"sideways"}"#, .invalidArgument),
        (#"{"class":"WATCH","streams":["motion"],"interval":0}"#, .invalidArgument),
        (#"{"class":"WATCH","streams":[]}"#, .invalidArgument),
        (#"{"class":"POLL"}"#, .malformed),
        // Issue 40, defect 12: a number no Double holds was "not valid JSON" answered as invalid_argument.
        (#"{"class":"HISTORY","stream":"pedometer","from":1e400}"#, .malformed),
        (#"{"class":"WATCH","streams":["motion"],"interval":-1e999}"#, .malformed),
        (#"{"class":"HISTORY","stream":"","from":0}"#, .invalidArgument),
        // A gesture has no state to poll: the POLL waited its 2 s and timed out.
        (#"{"class":"POLL","streams":["motion","gesture"]}"#, .invalidArgument),
    ])
    func badRequestsGetTheDocumentedErrorCode(text: String, code: ErrorCode) {
        guard case .failure(let error) = decode(text) else {
            Issue.record("\(text) was accepted")
            return
        }
        #expect(error.code == code, "\(text): \(error.message)")
        #expect(!error.message.isEmpty)
    }

    /// Issue 60, defect 14b: NaN and Infinity are not JSON (RFC 8259 section 6: "Numeric values that
    /// cannot be represented ... (such as Infinity and NaN) are not permitted"), and neither is a number
    /// beyond a double's ±1.8e308 for this daemon; each was answered "not a JSON object", which a
    /// JSON object with one bad number is not. The answer names the field and what is wrong, with
    /// `malformed` (docs/protocol.md: not valid JSON).
    @Test(arguments: [
        (#"{"class":"WATCH","streams":["motion"],"interval":NaN}"#, #""interval" is NaN"#),
        (#"{"class":"WATCH","streams":["motion"],"interval":Infinity}"#, #""interval" is Infinity"#),
        (#"{"class":"WATCH","streams":["motion"],"interval":-Infinity}"#, #""interval" is -Infinity"#),
        (#"{"class":"WATCH","streams":["motion"],"latency":nan}"#, #""latency" is nan"#),
        (#"{"class":"WATCH","streams":["motion"],"interval":1e400}"#, #""interval" is 1e400"#),
        (#"{"class":"HISTORY","stream":"pedometer","from":1e400}"#, #""from" is 1e400"#),
        (#"{"class":"POLL","id":NaN,"streams":["motion"]}"#, #""id" is NaN"#),
        (#"{"class":"WATCH","streams":["motion"],"interval":[1,NaN]}"#, #""interval" is NaN"#),
    ])
    func aNumberJSONHasNotIsNamedAsMalformed(text: String, named: String) {
        guard case .failure(let error) = decode(text) else {
            Issue.record("\(text) was accepted")
            return
        }
        #expect(error.code == .malformed, "\(text): \(error.message)")
        #expect(error.message.hasPrefix("not valid JSON: \(named)"), "\(text): \(error.message)")
        #expect(error.message.contains("finite") || error.message.contains("1.8e308"), "\(text): \(error.message)")
    }

    /// The neighbours of NaN, each with the error it should get: a negative interval is a number out
    /// of range (`invalid_argument`, the range named), NaN inside a string is a string, and a line
    /// that is no object at all is still said to be none.
    @Test func numbersNearNaNGetTheirOwnAnswers() {
        let nan = "not valid JSON: \"interval\" is NaN, which JSON has no number for: send a finite number"
        #expect(throws: ErrorReply(id: nil, code: .malformed, message: nan)) { try decode(#"{"class":"WATCH","streams":["motion"],"interval":NaN}"#).get() }
        let huge = "not valid JSON: \"interval\" is 1e400, beyond the largest number a double holds (±1.8e308)"
        #expect(throws: ErrorReply(id: nil, code: .malformed, message: huge)) { try decode(#"{"class":"WATCH","streams":["motion"],"interval":1e400}"#).get() }
        #expect(throws: ErrorReply(id: nil, code: .invalidArgument, message: "interval -1.0 s is outside 0.001…60.0 s")) {
            try decode(#"{"class":"WATCH","streams":["motion"],"interval":-1}"#).get()
        }
        #expect(throws: ErrorReply(id: nil, code: .malformed, message: "interval: Expected to decode Double but found a string instead.")) {
            try decode(#"{"class":"WATCH","streams":["motion"],"interval":"NaN"}"#).get()
        }
        #expect(throws: ErrorReply(id: nil, code: .malformed, message: "not a JSON object")) { try decode("NaN").get() }
        #expect(throws: ErrorReply(id: nil, code: .malformed, message: "not a JSON object")) { try decode("not json").get() }
    }

    /// A name echoed in an error is bounded in bytes, not Characters: "e" and 1,900 combining acute
    /// accents (U+0301, 2 bytes each) are one Character, so a prefix of 40 Characters echoed the
    /// whole 3.8 kB of a 4 kB line (ProtocolVersion.maximumLineLength). The echo keeps whole
    /// scalars (valid UTF-8, no U+FFFD) and says it was cut.
    @Test(arguments: [
        #"{"class":"WATCH","streams":["motion"],"NAME":NaN}"#,
        #"{"class":"NAME"}"#,
        #"{"class":"WATCH","streams":["NAME"]}"#,
    ])
    func aNameEchoedInAnErrorIsBoundedInBytes(template: String) {
        let name = "e" + String(repeating: "\u{301}", count: 1_900)
        #expect(name.count == 1 && name.utf8.count == 3_801)
        let text = template.replacingOccurrences(of: "NAME", with: name)
        #expect(text.utf8.count <= ProtocolVersion.maximumLineLength)
        guard case .failure(let error) = decode(text) else {
            Issue.record("\(template) was accepted")
            return
        }
        // The fixed text (45 bytes and the streams' list, which grows with the protocol), 40 bytes of
        // the name and "…".
        let streams = StreamKind.allCases.map(\.rawValue).joined(separator: ", ")
        #expect(error.message.utf8.count < streams.utf8.count + 110, "\(template): \(error.message.utf8.count) bytes")
        #expect(!error.message.unicodeScalars.contains("\u{FFFD}"), "\(template): a scalar was cut")
        // Compared as bytes: as Characters "e" with 1 mark is not "e" with 19.
        #expect(error.message.utf8.firstRange(of: "e\u{301}\u{301}".utf8) != nil, "\(template): the name is not echoed")
    }

    /// Issue 40, defect 12: `"stream":""` was answered with Swift's decoding text ("Cannot initialize
    /// StreamKind from invalid String value "), which names a type and no choice.
    @Test(arguments: [#"{"class":"HISTORY","stream":"","from":0}"#, #"{"class":"WATCH","streams":["speed"]}"#])
    func aStreamThatIsNoneIsNamedWithTheStreamsThereAre(text: String) {
        guard case .failure(let error) = decode(text) else {
            Issue.record("\(text) was accepted")
            return
        }
        #expect(error.message.contains("is not a stream; streams are motion, accelerometer,"), "\(error.message)")
        #expect(!error.message.contains("Cannot initialize"), "\(error.message)")
    }

    @Test func anErrorCarriesTheRequestsID() {
        guard case .failure(let error) = decode(#"{"class":"SPEED","id":"x-1"}"#) else { return }
        #expect(error.id == .string("x-1"))
    }

    @Test func encodedRequestsDecodeToThemselves() throws {
        let requests: [Request] = [
            .watch(Request.Watch(id: .integer(1), streams: [.motion], interval: 0.5, frame: .xMagneticNorthZVertical)),
            .poll(Request.Poll(id: .string("p"), streams: [.gyroscope, .orientation])),
            .devices(id: .integer(3)), .status(id: nil),
        ]
        for request in requests {
            #expect(try decode(String(decoding: request.encoded(), as: UTF8.self)).get() == request)
        }
    }
}

@Suite struct MessageTests {
    let motion = MotionMessage(
        timestamp: 1_234_567_890_123, frame: .xMagneticNorthZVertical,
        attitude: AttitudeMessage(quaternion: Quaternion(w: 0.7071068, x: 0, y: 0, z: -0.7071068), roll: 0, pitch: 0, yaw: -1.5707963, rotationMatrix: Matrix3(rowMajor: [0, -1, 0, 1, 0, 0, 0, 0, 1])),
        gravity: Vector3(x: 0, y: 0, z: -1), userAcceleration: .zero, rotationRate: Vector3(x: 0.01, y: 0, z: 0),
        magneticField: CalibratedFieldMessage(field: Vector3(x: 0, y: 19, z: -46), accuracy: .high), heading: 0)

    @Test func linesStartWithTheClassUseSnakeCaseAndEndInANewline() throws {
        let line = String(decoding: try Wire.encode(motion), as: UTF8.self)
        #expect(line.hasPrefix(#"{"class":"MOTION","#))
        #expect(line.hasSuffix("}\n"))
        #expect(line.contains(#""user_acceleration":"#) && line.contains(#""rotation_matrix":"#))
        #expect(line.contains(#""timestamp":1234567890123"#), "timestamps are exact integers")
        #expect(line.filter { $0 == "\n" }.count == 1)
        #expect(Wire.className(of: Array(line.utf8.dropLast())) == "MOTION")
    }

    @Test func everyMessageRoundTrips() throws {
        func roundTrip<M: ServerMessage>(_ m: M) throws {
            let line = Array(try Wire.encode(m).dropLast())
            #expect(Wire.className(of: line) == M.className)
            #expect(try Wire.decode(M.self, from: line) == m)
        }
        try roundTrip(Version(release: "0.1.0"))
        try roundTrip(motion)
        try roundTrip(AccelerometerMessage(timestamp: 5, acceleration: Vector3(x: 0, y: 0, z: -1)))
        try roundTrip(GyroscopeMessage(timestamp: 6, rotationRate: Vector3(x: 0.1, y: 0, z: 0)))
        try roundTrip(MagnetometerMessage(timestamp: 7, magneticField: Vector3(x: 3, y: 17, z: -41)))
        try roundTrip(ProximityMessage(timestamp: 8, near: true, value: 412))
        try roundTrip(OrientationMessage(timestamp: 9, orientation: .leftUp))
        try roundTrip(Dropped(stream: .motion, count: 12))
        try roundTrip(Ended(stream: .accelerometer, reason: "iio:device0 was removed"))
        try roundTrip(ErrorReply(id: .integer(5), code: .tooLong, message: "line longer than 4096 bytes"))
        try roundTrip(Watching(id: .integer(3), streams: [Watching.Stream(stream: .motion, interval: 0.5, frame: .xArbitraryZVertical), Watching.Stream(stream: .orientation)]))
        var snapshot = Snapshot(id: .string("s"))
        snapshot.insert(.motion(motion))
        snapshot.insert(.proximity(ProximityMessage(timestamp: 8, near: false, value: 3)))
        try roundTrip(snapshot)
        try roundTrip(DevicesReply(id: nil, devices: [DevicesReply.Device(
            device: "iio:device0", name: "bmi160", kinds: [.accelerometer, .gyroscope], mode: "buffered", rates: [25, 50],
            mountMatrix: [1, 0, 0, 0, 1, 0, 0, 0, 1], mountMatrixSource: "identity", channels: ["accelerometer": ["in_accel_x_raw"]])]))
        try roundTrip(StatusReply(id: .integer(4), uptime: 3600.5, clients: 2, sensors: [StatusReply.Sensor(
            device: "iio:device0", kinds: [.accelerometer], mode: "polled", rate: 100, measuredRate: 99.97)], dropped: 0,
            calibration: StatusReply.Calibration(
                gyroscopeBias: .zero, gyroscopeScale: Vector3(x: 0.0021, y: -0.0008, z: 0.0003),
                magnetometerOffset: Vector3(x: 3.1, y: -2, z: 5.2), magneticFieldAccuracy: .high)))
    }
}

/// Every complete example in docs/protocol.md parses as what it says it is: the spec and the code agree.
@Suite struct SpecificationExampleTests {
    static func exampleLines() throws -> [String] {
        let spec = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../docs/protocol.md").standardized
        let text = try String(contentsOf: spec, encoding: .utf8)
        return text.split(separator: "\n").map(String.init).filter { !$0.contains("…") }
    }

    @Test func everyServerExampleDecodesAsItsClass() throws {
        // Every class the daemon sends: the streams' catalogue and the replies.
        let types = Dictionary(uniqueKeysWithValues: AnyServerMessage.allClasses.map { ($0.name, $0.type) })
        var checked = 0
        for var line in try Self.exampleLines() {
            if line.hasPrefix("< ") { line.removeFirst(2) }
            guard line.hasPrefix("{\"class\":"), let name = Wire.className(of: Array(line.utf8)) else { continue }
            // A DEVICES request looks like the reply's class: only replies have "devices".
            if name == "DEVICES" && !line.contains("\"devices\"") { continue }
            if ["WATCH", "POLL", "STATUS"].contains(name) && !line.contains("uptime") { continue }
            // A HISTORY request, not its reply: only replies have "steps" or "activities".
            if name == "HISTORY" && !line.contains("\"steps\"") && !line.contains("\"activities\"") { continue }
            let type = try #require(types[name], "\(name) has no message type")
            func check<M: ServerMessage>(_ t: M.Type) throws { _ = try Wire.decode(t, from: Array(line.utf8)) }
            try check(type)
            checked += 1
        }
        #expect(checked >= 20)
    }

    @Test func theStatusExampleCarriesTheGyroscopeCalibrationUnderItsDocumentedKeys() throws {
        let line = try #require(try Self.exampleLines().first { $0.hasPrefix("{\"class\":\"STATUS\"") && $0.contains("uptime") })
        let calibration = try #require(try Wire.decode(StatusReply.self, from: Array(line.utf8)).calibration)
        #expect(calibration.gyroscopeBias == Vector3(x: 0.001, y: -0.002, z: 0.0005))
        #expect(calibration.gyroscopeScale == Vector3(x: 0.0021, y: -0.0008, z: 0.0003))
    }

    @Test func everyClientExampleIsAValidRequestOrGetsItsDocumentedError() throws {
        var checked = 0
        for var line in try Self.exampleLines() {
            if line.hasPrefix("> ") { line.removeFirst(2) } else if !line.hasPrefix("{\"class\":\"WATCH\"") && !line.hasPrefix("{\"class\":\"POLL\"") && !line.hasPrefix("{\"class\":\"DEVICES\",\"id\":3}") && !line.hasPrefix("{\"class\":\"STATUS\",\"id\":4}") { continue }
            let result = Request.decode(Array(line.utf8))
            switch result {
            case .success: checked += 1
            case .failure(let error):
                // The session shows two bad requests on purpose.
                #expect(line == "not json" || line.contains("SPEED"), "\(line): \(error.message)")
                checked += 1
            }
        }
        #expect(checked >= 8)
    }
}
