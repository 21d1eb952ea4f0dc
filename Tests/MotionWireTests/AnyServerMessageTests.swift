import MotionCore
import Testing

@testable import MotionWire

/// Every reader of the daemon's lines decodes them through `AnyServerMessage`: one parse picks the
/// class and fills the fields.
@Suite struct AnyServerMessageTests {
    @Test(arguments: [
        AnyServerMessage.version(Version(release: "0.1.0")),
        .error(ErrorReply(id: .integer(3), code: .unavailable, message: "no such sensor")),
        .watching(Watching(id: .string("a"), streams: [.init(stream: .motion, interval: 0.01, frame: .xMagneticNorthZVertical)])),
        .accelerometer(AccelerometerMessage(timestamp: 1_000, acceleration: Vector3(x: 0, y: -1, z: 0))),
        .gyroscope(GyroscopeMessage(timestamp: 2_000, rotationRate: Vector3(x: 0.1, y: 0.2, z: 0.3))),
        .magnetometer(MagnetometerMessage(timestamp: 3_000, magneticField: Vector3(x: 20, y: 0, z: -40))),
        .proximity(ProximityMessage(timestamp: 4_000, near: true, value: 12)),
        .light(LightMessage(timestamp: 5_000, illuminance: 300, unit: .lux)),
        .orientation(OrientationMessage(timestamp: 6_000, orientation: .leftUp)),
        .tilt(TiltMessage(timestamp: 7_000, tilt: .faceUp)),
        .hinge(HingeMessage(timestamp: 8_000, angle: 120, mode: .laptop)),
        .hinge(HingeMessage(timestamp: 8_500, angle: 360, mode: .tablet, display: Vector3(x: 0, y: -1, z: 0), base: Vector3(x: 0.5, y: -0.5, z: 0))),
        .dropped(Dropped(stream: .motion, count: 7)),
        .ended(Ended(stream: .gyroscope, reason: "iio:device0 was removed")),
        .snapshot(Snapshot(id: .integer(1))),
        .devices(DevicesReply(id: nil, devices: [])),
    ])
    func eachClassReadsBackAsTheMessageWritten(_ message: AnyServerMessage) throws {
        let written = try #require(message.message)
        let line = try Wire.encode(written)
        #expect(try AnyServerMessage(line: line) == message)
    }

    /// docs/protocol.md: classes are added in minor versions; a reader skips those it does not know.
    @Test func aClassThisVersionDoesNotKnowIsUnknownNotAnError() throws {
        let message = try AnyServerMessage(line: Array(#"{"class":"BAROMETER","pressure":101.3}"#.utf8))
        #expect(message == .unknown(className: "BAROMETER"))
        #expect(message.message == nil)
    }

    /// A SNAPSHOT from a later minor version: a stream this version does not know is skipped and the
    /// others read; a stream sent as null is none.
    @Test func aSnapshotsStreamThisVersionDoesNotKnowIsSkipped() throws {
        let line = #"{"class":"SNAPSHOT","id":2,"barometer":{"timestamp":1,"pressure":101.3},"tilt":{"timestamp":7000,"tilt":"face-up"},"light":null}"#
        guard case .snapshot(let snapshot) = try AnyServerMessage(line: Array(line.utf8)) else {
            Issue.record("not read as a SNAPSHOT")
            return
        }
        #expect(snapshot.id == .integer(2))
        #expect(snapshot.tilt == TiltMessage(timestamp: 7000, tilt: .faceUp))
        #expect(StreamKind.allCases.filter { snapshot[$0] != nil } == [.tilt])
    }

    @Test(arguments: [#"{"steps":12}"#, #"["class"]"#, "not json", #"{"class":"TILT","timestamp":"soon"}"#])
    func aLineWithoutAClassOrWhoseFieldsDoNotFitItIsRefused(_ line: String) {
        #expect(throws: (any Error).self) { try AnyServerMessage(line: Array(line.utf8)) }
    }
}
