import Logging
import MotionCore
import MotionFusion
import MotionWire
import NIOPosix
import Testing

@testable import MotionHub

/// The pipeline's fusion stage driven directly, with samples: no socket, no hub. The references are
/// the motion the samples stand for: a turn at a known rate, gravity straight down.
@Suite struct FusionStageTests {
    static let imu = DeviceNumber(0)

    static func stage() -> (FusionStage, SavedState<SensorFusion.Calibration>) {
        let calibration = SavedState<SensorFusion.Calibration>(
            "calibration", store: nil, offLoop: OffLoopWork(eventLoop: MultiThreadedEventLoopGroup.singleton.any()), logger: Logger(label: "test"))
        return (FusionStage(calibration: calibration), calibration)
    }

    /// 100 Hz IMU scans of a device lying flat and turning about the vertical at `rate` rad/s: the
    /// accelerometer's sample, then the gyroscope's, with one timestamp (as one scan gives them).
    static func scans(seconds: Double, rate: Double) -> [SensorSample] {
        (0..<Int(seconds * 100)).flatMap { i in
            let t = Int64(i) * 10_000_000
            return [
                SensorSample(kind: .accelerometer, device: imu, timestamp: t, vector: Vector3(x: 0, y: 0, z: Units.standardGravity)),
                SensorSample(kind: .gyroscope, device: imu, timestamp: t, vector: Vector3(x: 0, y: 0, z: rate)),
            ]
        }
    }

    static func imuRates(_ kind: SensorKind) -> Double? { kind == .accelerometer || kind == .gyroscope ? 100 : nil }

    /// A motion is due at each gyroscope sample, once the accelerometer has given one; 3 s turning at
    /// 0.5 rad/s is a yaw of 1.5 rad (the attitude's own integral), with the rate itself and gravity
    /// straight down.
    @Test func motionIsMadeAtTheGyroscopesRateAndFollowsTheTurn() throws {
        let (stage, _) = Self.stage()
        stage.follow(motionNeeded: true, rate: Self.imuRates)
        var due: [Int64] = []
        var raw: [StreamKind] = []
        for sample in Self.scans(seconds: 3, rate: 0.5) {
            if let message = stage.take(sample, period: 10_000_000) { raw.append(message.stream!) }
            if let pending = stage.takePendingMotion() { due.append(pending.timestamp) }
        }
        #expect(due.count == 300 && due.first == 0 && due.last == 2_990_000_000, "one per gyroscope sample")
        #expect(raw.count == 600 && Set(raw) == [.accelerometer, .gyroscope])
        let motion = try #require(stage.motion(in: .xArbitraryZVertical))
        #expect(abs(motion.rotationRate.z - 0.5) < 0.01, "\(motion.rotationRate)")
        #expect((motion.gravity - Vector3(x: 0, y: 0, z: -1)).length < 0.01, "\(motion.gravity)")
        // 2.99 s of turning at 0.5 rad/s; yaw counts counter-clockwise seen from above.
        #expect(abs(motion.attitude.yaw - 1.495) < 0.05, "yaw \(motion.attitude.yaw) rad")
    }

    /// The magnetometer's axes are checked once the gyroscope's agree: an IMU turned about three
    /// axes, its magnetometer (a separate chip, read at 100 Hz) x and z inverted (a half turn about
    /// y). Once its calibration fits, the stage says it disagrees, with the matrix that mends it,
    /// once; a magnetometer mounted alike is said to agree.
    @Test(arguments: [Matrix3(rowMajor: [-1, 0, 0, 0, 1, 0, 0, 0, -1]), .identity])
    func theMagnetometersAxesAreCheckedAgainstTheGyroscopes(mapping: Matrix3) throws {
        let (stage, _) = Self.stage()
        var told: [AxesVerdict] = []
        stage.axes.checked = { sensor, verdict in if sensor == .magnetometer { told.append(verdict) } }
        stage.follow(motionNeeded: true) { _ in 100 }
        var q = Quaternion(angle: 0.4, axis: Vector3(x: 1, y: 1, z: 0) * (1 / 2.0.squareRoot()))
        let earth = Vector3(x: 0, y: 19, z: -46)
        var t: Int64 = 0
        let magnetometer = DeviceNumber(1)
        // Turns about many axes (the calibration needs directions all round, the checks every axis shown).
        let axes = [Vector3(x: 1, y: 0, z: 0), Vector3(x: 0, y: 1, z: 0), Vector3(x: 0.6, y: -0.48, z: 0.64), Vector3(x: 0, y: 0, z: 1)]
        for round in 0..<36 {
            let axis = axes[round % axes.count]
            let ω = axis * (1.2 / axis.length)
            for _ in 0..<150 {
                q = (q * Quaternion(angle: ω.length * 0.01, axis: ω * (1 / ω.length))).normalized
                t += 10_000_000
                let toDevice = q.conjugate
                _ = stage.take(SensorSample(kind: .accelerometer, device: Self.imu, timestamp: t, vector: toDevice.rotate(Vector3(x: 0, y: 0, z: Units.standardGravity))), period: 10_000_000)
                _ = stage.take(SensorSample(kind: .gyroscope, device: Self.imu, timestamp: t, vector: ω), period: 10_000_000)
                _ = stage.take(SensorSample(kind: .magnetometer, device: magnetometer, timestamp: t + 1_000_000, vector: mapping * toDevice.rotate(earth)), period: 10_000_000)
                _ = stage.takePendingMotion()
            }
        }
        #expect(stage.axes.gyroscope == .agree)
        #expect(told == [mapping == .identity ? .agree : .disagree(mapping.transposed)], "\(told)")
        #expect(stage.axes.magnetometer == told.first)
    }

    /// Without a gyroscope, a motion is due with each accelerometer sample, its rotation rate one the
    /// machine cannot give.
    @Test func withoutAGyroscopeMotionIsMadeAtTheAccelerometersRate() throws {
        let (stage, _) = Self.stage()
        stage.follow(motionNeeded: true) { $0 == .accelerometer ? 50 : nil }
        var due = 0
        for sample in Self.scans(seconds: 1, rate: 0) where sample.kind == .accelerometer {
            _ = stage.take(sample, period: 20_000_000)
            if stage.takePendingMotion() != nil { due += 1 }
        }
        #expect(due == 100)
        let motion = try #require(stage.motion(in: .xArbitraryZVertical))
        #expect(motion.unavailable?.contains(.rotationRate) == true, "\(String(describing: motion.unavailable))")
    }

    /// No motion is answered before the samples it needs, and none is due.
    @Test func motionWaitsForTheSamplesItNeeds() {
        let (stage, _) = Self.stage()
        stage.follow(motionNeeded: true, rate: Self.imuRates)
        let gyroscope = SensorSample(kind: .gyroscope, device: Self.imu, timestamp: 0, vector: Vector3(x: 0, y: 0, z: 1))
        _ = stage.take(gyroscope, period: 10_000_000)
        #expect(stage.takePendingMotion() == nil, "no accelerometer yet")
        #expect(stage.motion(in: .xArbitraryZVertical) == nil && stage.latest(.accelerometer, frame: .xArbitraryZVertical) == nil)
        #expect(stage.latest(.gyroscope, frame: .xArbitraryZVertical) == .gyroscope(GyroscopeMessage(timestamp: 0, rotationRate: gyroscope.vector)))
    }

    /// A motion taken as due is made from the fusion it was due from, even if a replan meanwhile
    /// ended the fusion (a client leaving while the motion is sent to the others): no fusion to read
    /// was a crash.
    @Test func aDueMotionOutlivesTheFusionEndingWhileItIsSent() throws {
        let (stage, _) = Self.stage()
        stage.follow(motionNeeded: true, rate: Self.imuRates)
        var due: FusionStage.DueMotion?
        for sample in Self.scans(seconds: 0.5, rate: 0.5) {
            _ = stage.take(sample, period: 10_000_000)
            due = stage.takePendingMotion() ?? due
        }
        let expected = try #require(stage.motion(in: .xArbitraryZVertical))
        stage.follow(motionNeeded: false, rate: Self.imuRates)
        #expect(stage.fusion == nil)
        #expect(stage.motion(try #require(due), in: .xArbitraryZVertical) == expected)
    }

    /// Nobody wanting motion ends the fusion: no motion is due or answered, the raw streams go on, and
    /// what it learnt is kept for the next one.
    @Test func nobodyWantingMotionEndsTheFusionAndKeepsWhatItLearnt() throws {
        let (stage, calibration) = Self.stage()
        stage.follow(motionNeeded: true, rate: Self.imuRates)
        for sample in Self.scans(seconds: 1, rate: 0) { _ = stage.take(sample, period: 10_000_000) }
        #expect(calibration.value == nil)
        stage.follow(motionNeeded: false, rate: Self.imuRates)
        #expect(stage.fusion == nil && stage.pendingMotion == nil && calibration.value != nil)
        for sample in Self.scans(seconds: 0.1, rate: 0) { #expect(stage.take(sample, period: 10_000_000) != nil) }
        #expect(stage.takePendingMotion() == nil && stage.motion(in: .xArbitraryZVertical) == nil)
        stage.sensorsStopped()
        #expect(stage.latest(.accelerometer, frame: .xArbitraryZVertical) == nil)
    }
}
