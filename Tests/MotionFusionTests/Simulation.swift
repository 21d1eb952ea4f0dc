import Foundation
import MotionCore

@testable import MotionFusion

/// Drives a `SensorFusion` with synthetic, noise-free (or seeded-noise) readings of a device whose
/// true attitude (device → ENU) follows a given path.
struct Simulation {
    var rate = 100.0
    /// The Earth's field in ENU, µT (Berlin-like: 19 µT north, 46 µT down).
    var earthField = Vector3(x: 0, y: 19, z: -46)
    var gyroscopeBias = Vector3.zero
    /// The gyroscope's sensitivity per axis: it reads the true rate × this (1: exact).
    var gyroscopeSensitivity = Vector3(x: 1, y: 1, z: 1)
    /// How the gyroscope is mounted against the accelerometer: it reads this times the rate (identity: alike).
    var gyroscopeMapping = Matrix3.identity
    var magnetometerOffset = Vector3.zero
    var fusion: SensorFusion
    private(set) var time: Int64 = 0
    private var noise = SeededNoise(seed: 1)
    /// Scales the noise: 1 gives 0.003 rad/s, 0.05 m/s² and 0.5 µT per sample (a consumer MEMS IMU).
    var noiseLevel = 0.0

    init(rate: Double = 100, useMagnetometer: Bool = true, declination: Double = 0, parameters: OrientationFilter.Parameters = .init()) {
        self.rate = rate
        fusion = SensorFusion(gyroscopeRate: rate, declination: declination, parameters: parameters)
        self.useMagnetometer = useMagnetometer
    }

    var useMagnetometer: Bool

    /// Holds `attitude` for `seconds`, with the device's `extraField` (µT, ENU) added to the Earth's.
    mutating func hold(_ attitude: Quaternion, seconds: Double, extraField: Vector3 = .zero) {
        rotate(from: attitude, rate: .zero, seconds: seconds, extraField: extraField)
    }

    /// Turns at a constant body rate (rad/s) from `start` for `seconds`; returns the final attitude.
    @discardableResult
    mutating func rotate(from start: Quaternion, rate omega: Vector3, seconds: Double, extraField: Vector3 = .zero) -> Quaternion {
        let dt = 1 / rate
        var q = start
        let speed = omega.length
        let step = speed > 0 ? Quaternion(angle: speed * dt, axis: omega * (1 / speed)) : .identity
        let halfStep = speed > 0 ? Quaternion(angle: speed * dt / 2, axis: omega * (1 / speed)) : .identity
        for _ in 0..<Int((seconds * rate).rounded()) {
            // Every sensor gives the mean over the period before the timestamp, as an IMU's digital
            // low-pass does: the gyroscope the mean rate, the accelerometer and magnetometer the mean
            // of a vector turning steadily, which points where it does at the period's middle.
            let middle = (q * halfStep).normalized
            q = (q * step).normalized
            time += Int64(dt * 1e9)
            let toDevice = middle.conjugate
            let force = toDevice.rotate(Vector3(x: 0, y: 0, z: Units.standardGravity))
            let field = toDevice.rotate(earthField + extraField) + magnetometerOffset
            let read = gyroscopeMapping * Vector3(x: omega.x * gyroscopeSensitivity.x, y: omega.y * gyroscopeSensitivity.y, z: omega.z * gyroscopeSensitivity.z)
            feed(.gyroscope, read + gyroscopeBias + noise.vector(noiseLevel * 0.003))
            feed(.accelerometer, force + noise.vector(noiseLevel * 0.05))
            if useMagnetometer { feed(.magnetometer, field + noise.vector(noiseLevel * 0.5)) }
        }
        return q
    }

    /// Follows `path` (device → ENU at each time, s) from `start` for `seconds`, turning at a constant
    /// rate for each `step` s between its poses; returns the final attitude.
    @discardableResult
    mutating func follow(
        _ path: (Double) -> Quaternion, from start: Double, seconds: Double, step: Double = 0.04, extraField: (Double) -> Vector3 = { _ in .zero }
    ) -> Quaternion {
        var q = path(start)
        var t = start
        while t < start + seconds - step / 2 {
            let next = path(t + step)
            var delta = q.conjugate * next
            if delta.w < 0 { delta = Quaternion(w: -delta.w, x: -delta.x, y: -delta.y, z: -delta.z) }
            let half = acos(min(1, delta.w))
            let axis = half > 1e-12 ? Vector3(x: delta.x, y: delta.y, z: delta.z) * (1 / sin(half)) : .zero
            q = rotate(from: q, rate: axis * (2 * half / step), seconds: step, extraField: extraField(t))
            t += step
        }
        return q
    }

    private mutating func feed(_ kind: SensorKind, _ v: Vector3) {
        fusion.update(SensorSample(kind: kind, device: DeviceNumber(0), timestamp: time, vector: v))
    }
}

/// A small deterministic Gaussian-ish noise source (sum of uniforms), so tests are repeatable.
struct SeededNoise {
    private var state: UInt64
    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }

    mutating func next() -> Double {
        var sum = 0.0
        for _ in 0..<4 {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            sum += Double(state >> 11) / Double(1 << 53)
        }
        return (sum - 2) * 1.7320508  // unit variance
    }

    mutating func vector(_ sigma: Double) -> Vector3 {
        sigma == 0 ? .zero : Vector3(x: next() * sigma, y: next() * sigma, z: next() * sigma)
    }
}

/// Rotation by `degrees` about a device axis, as a quaternion.
func turn(_ degrees: Double, about axis: Axis) -> Quaternion {
    var unit = Vector3.zero
    unit[axis] = 1
    return Quaternion(angle: degrees * .pi / 180, axis: unit)
}

func degrees(_ radians: Double) -> Double { radians * 180 / .pi }
