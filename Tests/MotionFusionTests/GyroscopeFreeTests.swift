import Foundation
import MotionCore
import Testing

@testable import MotionFusion

/// Machines without a gyroscope: an accelerometer alone (most 2-in-1 laptops), or with a magnetometer
/// (many tablets). Expected values come from the pose by hand (docs/frames.md's worked examples).
@Suite struct GyroscopeFreeTests {
    /// Feeds `seconds` of a device held at `attitude` (device → ENU) at 50 Hz, with the Earth's field
    /// (19 µT north, 46 µT down) plus `extraField` (µT, ENU), and noise of a consumer MEMS part.
    static func hold(
        _ fusion: inout SensorFusion, _ attitude: Quaternion, seconds: Double, from start: Int64 = 0,
        magnetometer: Bool = true, magnetometerEvery: Int = 1, extraField: Vector3 = .zero, noise: inout SeededNoise,
        headings: ((Double) -> Void)? = nil
    ) -> Int64 {
        var t = start
        for _ in 0..<Int((seconds * 50).rounded()) {
            t += 20_000_000
            let toDevice = attitude.conjugate
            let force = toDevice.rotate(Vector3(x: 0, y: 0, z: Units.standardGravity)) + noise.vector(0.05)
            fusion.update(SensorSample(kind: .accelerometer, device: DeviceNumber(0), timestamp: t, vector: force))
            if magnetometer, (t / 20_000_000) % Int64(magnetometerEvery) == 0 {
                let field = toDevice.rotate(Vector3(x: 0, y: 19, z: -46) + extraField) + noise.vector(0.5)
                fusion.update(SensorSample(kind: .magnetometer, device: DeviceNumber(1), timestamp: t + 3_000_000, vector: field))
            }
            if let headings, let heading = fusion.deviceMotion(in: .xMagneticNorthZVertical).heading { headings(heading) }
        }
        return t
    }

    @Test func anAccelerometerAloneGivesGravityPitchAndRollAndSaysYawIsUnavailable() {
        var fusion = SensorFusion(gyroscopeRate: nil, accelerometerRate: 50)
        var noise = SeededNoise(seed: 3)
        // Portrait, top edge up, then leaning back 30°: pitch 60°, gravity (0, −sin 60°, −cos 60°) g.
        let last = Self.hold(&fusion, turn(60, about: .x), seconds: 2, magnetometer: false, noise: &noise)
        let motion = fusion.deviceMotion()
        #expect(abs(degrees(motion.attitude.pitch) - 60) < 0.5)
        #expect(abs(degrees(motion.attitude.roll)) < 0.5)
        #expect(abs(motion.attitude.yaw) < 1e-12)
        #expect((motion.gravity - Vector3(x: 0, y: -0.866025, z: -0.5)).length < 0.01)
        #expect(motion.userAcceleration.length < 0.02)
        #expect(motion.unavailable == [.yaw, .rotationRate, .magneticField])
        #expect(fusion.deviceMotion(in: .xMagneticNorthZVertical).unavailable.contains(.heading))
        #expect(motion.timestamp == last, "stamped with the accelerometer sample it belongs to")
        // Landscape, right edge up (−90° about y): roll −90°, gravity (−1, 0, 0).
        _ = Self.hold(&fusion, turn(-90, about: .y), seconds: 2, from: last, magnetometer: false, noise: &noise)
        #expect(abs(degrees(fusion.deviceMotion().attitude.roll) + 90) < 0.5)
        #expect((fusion.deviceMotion().gravity - Vector3(x: -1, y: 0, z: 0)).length < 0.01)
    }

    @Test func anAccelerometerAndAMagnetometerGiveASteadyHeadingThatIgnoresAMagnet() {
        var fusion = SensorFusion(gyroscopeRate: nil, accelerometerRate: 50, magnetometerRate: 50)
        var noise = SeededNoise(seed: 4)
        // Flat, top edge east (yaw −90° from ENU's north-facing y... the device's y points east):
        // heading 90°. Tilted 20° toward the user, so the tilt compensation matters.
        let pose = Attitude.yawRotation(-.pi / 2) * turn(20, about: .x)
        var last = Self.hold(&fusion, pose, seconds: 3, noise: &noise)
        var headings: [Double] = []
        last = Self.hold(&fusion, pose, seconds: 5, from: last, noise: &noise) { headings.append($0) }
        let mean = headings.reduce(0, +) / Double(headings.count)
        let spread = (headings.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(headings.count)).squareRoot()
        #expect(abs(mean - 90) < 1, "mean heading \(mean)°")
        // 0.184° on this seeded input, before and after the turn-following of issue 44: a regression shows.
        #expect(spread < 0.2, "steady in the hand: standard deviation \(spread)°")
        #expect(fusion.deviceMotion(in: .xMagneticNorthZVertical).unavailable == [.rotationRate])
        // A magnet brought near (30 µT east): the heading holds instead of swinging toward it.
        var worst = 0.0
        _ = Self.hold(&fusion, pose, seconds: 5, from: last, extraField: Vector3(x: 30, y: 0, z: 0), noise: &noise) {
            worst = max(worst, abs($0 - 90))
        }
        #expect(worst < 3, "worst heading error with the magnet: \(worst)°")
    }

    /// A magnetometer sample delivered before the first accelerometer sample (the two devices start
    /// apart), on a device heading east and leaning back 60°: tilted by a tilt not yet known, it gave a
    /// heading 115° off and the disturbance detector a dip of 28° for a field whose dip is 68°, and
    /// the heading was still 64° off in the first second. It is skipped: the headings are the same,
    /// sample for sample, as without it.
    @Test func aFieldSeenBeforeTheTiltIsKnownDoesNotSetTheHeading() {
        let pose = Attitude.yawRotation(-.pi / 2) * turn(60, about: .x)
        func headings(earlyField: Bool) -> [Double] {
            var fusion = SensorFusion(gyroscopeRate: nil, accelerometerRate: 50, magnetometerRate: 50)
            var noise = SeededNoise(seed: 8)
            if earlyField {
                let field = pose.conjugate.rotate(Vector3(x: 0, y: 19, z: -46))
                fusion.update(SensorSample(kind: .magnetometer, device: DeviceNumber(1), timestamp: 1_000_000, vector: field))
            }
            var headings: [Double] = []
            _ = Self.hold(&fusion, pose, seconds: 1, noise: &noise) { headings.append($0) }
            return headings
        }
        let early = headings(earlyField: true), control = headings(earlyField: false)
        let worst = zip(early, control).map { abs(remainder($0 - $1, 360)) }.max() ?? .infinity
        #expect(early == control, "worst difference in the first second: \(worst)°")
    }

    /// Turned a quarter turn to the left in an instant (heading 90° to 0°), the magnetometer read at
    /// 50 Hz, or 10 Hz as a still chip polled for changes delivers: the heading is within 3° of the
    /// new one in 0.5 s (the heading's low-pass alone took 1.7 s at 50 Hz, 8 s at 10 Hz), and stays.
    @Test(arguments: [1, 5])
    func aQuarterTurnIsFollowedWithinHalfASecond(magnetometerEvery: Int) {
        var fusion = SensorFusion(gyroscopeRate: nil, accelerometerRate: 50, magnetometerRate: 50)
        var noise = SeededNoise(seed: 6)
        let east = Attitude.yawRotation(-.pi / 2) * turn(20, about: .x)
        let north = turn(20, about: .x)
        var t = Self.hold(&fusion, east, seconds: 3, magnetometerEvery: magnetometerEvery, noise: &noise)
        var elapsed = 0.0
        var reached: Double?
        while elapsed < 2 {
            t = Self.hold(&fusion, north, seconds: 0.02, from: t, magnetometerEvery: magnetometerEvery, noise: &noise)
            elapsed += 0.02
            let heading = fusion.deviceMotion(in: .xMagneticNorthZVertical).heading!
            let off = abs(remainder(heading, 360))
            if reached == nil, off < 3 { reached = elapsed }
            if let reached, elapsed > reached + 0.2 { #expect(off < 3, "\(heading)° at \(elapsed) s") }
        }
        #expect((reached ?? 9) <= 0.5, "\(String(describing: reached)) s")
    }

    /// A hand tilting the device at 90 °/s about its y axis, for 1 s, after 2 s held still, at 50 Hz:
    /// followed as a turn, the tilt's RMS error is under a third of the gravity low-pass's alone, which
    /// lags it 0.2 s (3.6° against 14.7° on this seeded input); held still, the tilt is the same
    /// sample for sample with and without the following (the noise at rest is unchanged).
    @Test func aHandsTiltIsFollowedAndTheTiltAtRestIsUnchanged() {
        func run(followsTilts: Bool) -> (rest: [Vector3], turnError: Double, settled: Double) {
            var parameters = GyroscopeFreeFilter.Parameters()
            // A threshold of a half turn is never passed: the gravity low-pass alone.
            if !followsTilts { parameters.turnThreshold = .pi }
            var fusion = SensorFusion(gyroscopeRate: nil, accelerometerRate: 50, gyroscopeFreeParameters: parameters)
            var noise = SeededNoise(seed: 7)
            var rest: [Vector3] = []
            var t = Self.hold(&fusion, turn(30, about: .x), seconds: 2, magnetometer: false, noise: &noise) { _ in }
            for _ in 0..<100 {
                t = Self.hold(&fusion, turn(30, about: .x), seconds: 0.02, from: t, magnetometer: false, noise: &noise)
                rest.append(fusion.deviceMotion().gravity)
            }
            var squared = 0.0
            for k in 1...50 {
                let pose = turn(30, about: .x) * turn(Double(k) * 1.8, about: .y)
                t = Self.hold(&fusion, pose, seconds: 0.02, from: t, magnetometer: false, noise: &noise)
                let truth = pose.conjugate.rotate(Vector3(x: 0, y: 0, z: -1))
                let error = acos(min(1, fusion.deviceMotion().gravity.dot(truth)))
                squared += error * error
            }
            _ = Self.hold(&fusion, turn(30, about: .x) * turn(90, about: .y), seconds: 1, from: t, magnetometer: false, noise: &noise)
            let truth = (turn(30, about: .x) * turn(90, about: .y)).conjugate.rotate(Vector3(x: 0, y: 0, z: -1))
            return (rest, degrees((squared / 50).squareRoot()), degrees(acos(min(1, fusion.deviceMotion().gravity.dot(truth)))))
        }
        let following = run(followsTilts: true), lowPassOnly = run(followsTilts: false)
        #expect(following.rest == lowPassOnly.rest, "the same at rest, sample for sample")
        #expect(following.turnError < lowPassOnly.turnError / 3, "RMS tilt error in the turn: \(following.turnError)° against \(lowPassOnly.turnError)°")
        #expect(following.settled < 0.5 && lowPassOnly.settled < 0.5, "\(following.settled)°, \(lowPassOnly.settled)°")
    }

    /// A flick of the wrist: the device turned from heading east to north while tilted back from 20°
    /// to 80°, in 0.24 s (375 °/s and 250 °/s, a hand's fast turn: the tilt is not steady), at 50 Hz,
    /// then held still; `extraField` (µT, ENU) added from the start of the flick. Returns the heading
    /// before the flick and those in the 0.5 s held still after it, °.
    static func flick(extraField: Vector3 = .zero) -> (before: Double, after: [Double]) {
        var fusion = SensorFusion(gyroscopeRate: nil, accelerometerRate: 50, magnetometerRate: 50)
        var noise = SeededNoise(seed: 9)
        func pose(_ s: Double) -> Quaternion { Attitude.yawRotation(-.pi / 2 * (1 - s)) * turn(20 + 60 * s, about: .x) }
        var t = Self.hold(&fusion, pose(0), seconds: 8, noise: &noise)
        let before = fusion.deviceMotion(in: .xMagneticNorthZVertical).heading!
        for k in 1...12 {
            t = Self.hold(&fusion, pose(Double(k) / 12), seconds: 0.02, from: t, extraField: extraField, noise: &noise)
        }
        var after: [Double] = []
        _ = Self.hold(&fusion, pose(1), seconds: 0.5, from: t, extraField: extraField, noise: &noise) { after.append($0) }
        return (before, after)
    }

    /// The field's strength is still judged while the tilt is not steady: a magnet brought up with the
    /// flick (30 µT east: 58.1 µT against the Earth's 49.8, 17 % off, beyond the detector's 10 %) is
    /// rejected on every sample and the heading holds where it was (a compass swayed by the magnet
    /// would read north plus atan2(30, 19) = 58°).
    @Test func aMagnetIsStillRejectedByItsStrengthWhileTheTiltIsNotSteady() {
        let run = Self.flick(extraField: Vector3(x: 30, y: 0, z: 0))
        let worst = run.after.map { abs(remainder($0 - run.before, 360)) }.max() ?? .infinity
        #expect(worst < 1, "the heading moved \(worst)° from \(run.before)°")
    }

    /// A vibrating phone (a motor's shaking: 3 m/s² RMS per axis on every sample) turned slowly from
    /// heading east to north, 30 °/s for 3 s, held 20° tilted back, at 50 Hz. Returns each heading
    /// with the true one, °.
    static func turnWhileVibrating() -> [(Double, Double)] {
        var fusion = SensorFusion(gyroscopeRate: nil, accelerometerRate: 50, magnetometerRate: 50)
        var noise = SeededNoise(seed: 10)
        func pose(_ s: Double) -> Quaternion { Attitude.yawRotation(-.pi / 2 * (1 - s)) * turn(20, about: .x) }
        var t = Self.hold(&fusion, pose(0), seconds: 8, noise: &noise)
        var headings: [(Double, Double)] = []
        for k in 1...150 {
            let s = Double(k) / 150
            let toDevice = pose(s).conjugate
            t += 20_000_000
            let force = toDevice.rotate(Vector3(x: 0, y: 0, z: Units.standardGravity)) + noise.vector(3)
            fusion.update(SensorSample(kind: .accelerometer, device: DeviceNumber(0), timestamp: t, vector: force))
            let field = toDevice.rotate(Vector3(x: 0, y: 19, z: -46)) + noise.vector(0.5)
            fusion.update(SensorSample(kind: .magnetometer, device: DeviceNumber(1), timestamp: t + 3_000_000, vector: field))
            headings.append((fusion.deviceMotion(in: .xMagneticNorthZVertical).heading!, 90 * (1 - s)))
        }
        return headings
    }

    /// A vibrating phone's heading follows a slow turn. The shaking tilts the specific force by up to
    /// tens of degrees from sample to sample, the tilt follows some of it, and the Earth's field seen
    /// through that tilt has a dip off by as much: judged by it, the field was rejected in stretches
    /// and the heading held there, 12.0° behind on average on this seeded input (a heading followed
    /// with the still device's 0.5 s would lag 30 × 0.5 = 15°). While the tilt is not steady the dip
    /// is not judged and the heading follows with the turn's 0.05 s, which lags a 30 °/s ramp by
    /// 30 × 0.05 = 1.5°; the shaking's heading errors, both ways, average out over the 150 samples
    /// (2.7° now). Bound: under 5° behind on average.
    @Test func aVibratingPhonesHeadingFollowsATurn() {
        let errors = Self.turnWhileVibrating().map { remainder($0.0 - $0.1, 360) }
        let lag = errors.reduce(0, +) / Double(errors.count)
        #expect(lag < 5, "\(lag)° behind on average: \(errors.map { Int($0.rounded()) })")
    }

    @Test func theTiltIsReportedWithinThreeHundredMillisecondsOfATurn() {
        var fusion = SensorFusion(gyroscopeRate: nil, accelerometerRate: 50)
        var noise = SeededNoise(seed: 5)
        var t = Self.hold(&fusion, turn(90, about: .x), seconds: 2, magnetometer: false, noise: &noise)
        // Turned onto its right edge at once: how long until gravity points within 20° of −x?
        var elapsed = 0.0
        while elapsed < 1 {
            t = Self.hold(&fusion, turn(-90, about: .y), seconds: 0.02, from: t, magnetometer: false, noise: &noise)
            elapsed += 0.02
            if fusion.deviceMotion().gravity.x < -cos(20 * Double.pi / 180) { break }
        }
        #expect(elapsed <= 0.3, "\(elapsed) s")
    }
}
