import MotionCore
import MotionFusion
import MotionWire
import Testing

@testable import MotionHub

/// The pipeline's event stage driven directly, with samples: no socket, no hub. What it sends is
/// checked against the poses the samples stand for and against the library's detectors on the same
/// samples.
@Suite struct EventStageTests {
    static let display = DeviceNumber(0)
    static let base = DeviceNumber(1)

    /// An accelerometer sample of `device` at `t` s: specific force, m/s², of gravity along `up` (the
    /// device axis pointing up).
    static func accelerometer(_ up: Vector3, at t: Double, device: DeviceNumber = display) -> SensorSample {
        SensorSample(kind: .accelerometer, device: device, timestamp: Int64(t * 1e9), vector: up * Units.standardGravity)
    }

    /// Upright for 1 s, then on its right edge (its left edge up) for 1 s, at 25 Hz: a `normal`
    /// orientation first, then one `left-up` (iio-sensor-proxy's names: the top edge up, then the
    /// left edge), each sent once, when the state changed, as the library's detector sees them.
    @Test func anOrientationIsSentWhenItChangesAndKeptForNewWatchers() throws {
        var stage = EventStage()
        stage.follow(wanted: [.orientation])
        var sent: [OrientationMessage] = []
        var reference = OrientationDetector()
        var changes: [ScreenOrientation] = []
        for i in 0..<50 {
            let sample = Self.accelerometer(i < 25 ? Vector3(x: 0, y: 1, z: 0) : Vector3(x: -1, y: 0, z: 0), at: Double(i) / 25)
            stage.take(sample, isWalking: false) { if case .orientation(let m) = $0 { sent.append(m) } }
            let before = reference.state
            if reference.update(gravity: sample.vector.accelerationFromSpecificForce) != before { changes.append(reference.state!) }
        }
        #expect(sent.map(\.orientation) == [.normal, .leftUp])
        #expect(sent.map(\.orientation) == changes)
        #expect(sent.last?.timestamp == 1_000_000_000, "sent with the sample that turned it")
        let latest = try #require(stage.latest(.orientation))
        guard case .orientation(let now) = latest else { Issue.record("\(latest)"); return }
        #expect(now.orientation == .leftUp && now.timestamp == 1_960_000_000, "the latest sample's, for a poll")
        stage.follow(running: [.light])
        #expect(stage.latest(.orientation) == nil && stage.latest(.tilt) == nil, "forgotten once the accelerometer stops")
    }

    /// The base's samples feed the hinge only (no orientation from them); each display sample then
    /// sends the angle, which is the library's estimator's on the same samples, and the readings it came from.
    @Test func theBaseFeedsOnlyTheHinge() throws {
        var stage = EventStage()
        stage.follow(wanted: [.orientation, .tilt, .hinge])
        stage.followHinge(base: Self.base, rate: 25)
        var reference = HingeEstimator(rate: 25)
        var hinges: [HingeMessage] = []
        var others = 0
        for i in 0..<50 {
            let t = Double(i) / 25
            // The base flat on a table, the lid upright.
            let base = Self.accelerometer(Vector3(x: 0, y: 0, z: 1), at: t, device: Self.base)
            let display = Self.accelerometer(Vector3(x: 0, y: 1, z: 0), at: t)
            stage.take(base, isWalking: false) { _ in others += 1 }
            stage.take(display, isWalking: false) { message in
                if case .hinge(let m) = message { hinges.append(m) } else { others += 1 }
            }
            reference.update(base: base.vector)
            reference.update(display: display.vector)
        }
        #expect(hinges.count == 50, "one per display sample")
        #expect(try #require(hinges.last).angle == reference.angle && hinges.last?.mode == reference.mode)
        // What the angle came from (protocol 1.9): each low-passed reading, as ACCELEROMETER gives it
        // (g, CoreMotion's sign: the lid's up is −y); after 2 s, ten time constants, settled.
        let display = try #require(hinges.last?.display), base = try #require(hinges.last?.base)
        #expect((display - Vector3(x: 0, y: -1, z: 0)).length < 1e-3 && (base - Vector3(x: 0, y: 0, z: -1)).length < 1e-3, "\(display) \(base)")
        #expect(others == 2, "the display's orientation and tilt, once each; nothing from the base")
        stage.followHinge(base: nil, rate: 25)
        var after = 0
        stage.take(Self.accelerometer(Vector3(x: 0, y: 1, z: 0), at: 3), isWalking: false) { if case .hinge = $0 { after += 1 } }
        #expect(after == 0 && stage.baseAccelerometer == nil, "no hinge once unwatched")
    }

    /// A detector whose stream is not wanted is not fed, the screen's two (orientation and tilt)
    /// counting as one: upright for 1 s with only the gestures wanted sends neither and keeps none for
    /// a poll. Once the tilt is wanted, the next sample sends both states (`normal`, iio-sensor-proxy's
    /// name for the top edge up, and `vertical`), from detectors that start afresh; with only the
    /// orientation wanted, both are kept; with neither, both are forgotten.
    @Test func aDetectorIsFedOnlyWhileItsStreamIsWanted() {
        var stage = EventStage()
        stage.follow(wanted: [.gesture])
        var sent: [StreamKind] = []
        for i in 0..<25 { stage.take(Self.accelerometer(Vector3(x: 0, y: 1, z: 0), at: Double(i) / 25), isWalking: false) { sent.append($0.stream!) } }
        #expect(sent == [], "\(sent)")
        #expect(stage.latest(.orientation) == nil && stage.latest(.tilt) == nil)
        stage.follow(wanted: [.gesture, .tilt])
        var next: [AnyServerMessage] = []
        stage.take(Self.accelerometer(Vector3(x: 0, y: 1, z: 0), at: 1), isWalking: false) { next.append($0) }
        let states: [AnyServerMessage] = [
            .orientation(OrientationMessage(timestamp: 1_000_000_000, orientation: .normal)), .tilt(TiltMessage(timestamp: 1_000_000_000, tilt: .vertical)),
        ]
        #expect(next == states, "\(next)")
        stage.follow(wanted: [.orientation])
        #expect(stage.latest(.orientation) == states[0] && stage.latest(.tilt) == states[1])
        stage.follow(wanted: [.gesture])
        #expect(stage.latest(.orientation) == nil && stage.latest(.tilt) == nil)
    }

    /// Proximity and light are events: sent when the state (near, the value and its unit) changed,
    /// not with every reading.
    @Test func proximityAndLightAreSentOnlyWhenTheyChange() {
        var stage = EventStage()
        let vendor = DeviceNumber(7)
        stage.vendorUnitLight = [vendor]
        var sent: [AnyServerMessage] = []
        let readings: [(SensorKind, Double, Bool, DeviceNumber)] = [
            (.proximity, 10, false, Self.display), (.proximity, 12, false, Self.display), (.proximity, 900, true, Self.display),
            (.light, 80, false, Self.display), (.light, 80, false, Self.display), (.light, 80, false, vendor),
        ]
        for (index, (kind, value, near, device)) in readings.enumerated() {
            let sample = SensorSample(kind: kind, device: device, timestamp: Int64(index), vector: Vector3(x: value, y: 0, z: 0), isNear: near)
            stage.take(sample, isWalking: false) { sent.append($0) }
        }
        #expect(sent == [
            .proximity(ProximityMessage(timestamp: 0, near: false, value: 10)), .proximity(ProximityMessage(timestamp: 2, near: true, value: 900)),
            .light(LightMessage(timestamp: 3, illuminance: 80, unit: .lux)), .light(LightMessage(timestamp: 5, illuminance: 80, unit: .vendor)),
        ])
        #expect(stage.latest(.proximity) == .proximity(ProximityMessage(timestamp: 2, near: true, value: 900)))
    }
}
