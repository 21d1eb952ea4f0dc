import MotionCore
import TestSupport

/// A device tumbling for the axis checks: turns of 1.2 rad/s about its body's x, then y, then a
/// slanted axis, 1.5 s each at 100 Hz, `rounds` times over, starting tilted so that no turn is about
/// the vertical alone. `body` gets each step's attitude q (body to world), body rate ω (rad/s),
/// time (ns) and a uniform noise vector of the given size; it returns false to stop.
func tumble(
    rounds: Int = 3, noise: Double = 0, seed: UInt64, _ body: (_ q: Quaternion, _ ω: Vector3, _ t: Int64, _ jitter: Vector3) -> Bool
) {
    var q = Quaternion(angle: 0.4, axis: Vector3(x: 1, y: 1, z: 0) * (1 / 2.0.squareRoot()))
    var t: Int64 = 0
    var random = SplitMix64(seed: seed)
    let axes = [Vector3(x: 1, y: 0, z: 0), Vector3(x: 0, y: 1, z: 0), Vector3(x: 0.6, y: -0.48, z: 0.64)]
    for axis in Array(repeating: axes, count: rounds).joined() {
        let ω = axis * (1.2 / axis.length)
        for _ in 0..<150 {
            q = (q * Quaternion(angle: ω.length * 0.01, axis: ω * (1 / ω.length))).normalized
            t += 10_000_000
            let jitter = Vector3(
                x: .random(in: -noise...noise, using: &random), y: .random(in: -noise...noise, using: &random),
                z: .random(in: -noise...noise, using: &random))
            guard body(q, ω, t, jitter) else { return }
        }
    }
}
