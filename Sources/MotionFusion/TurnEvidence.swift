import MotionCore

/// Which signed permutation `P` of a gyroscope's axes makes its rate explain how a direction fixed
/// in the world (gravity's, the Earth's field's) turns in the device's frame, weighed from the
/// device's own turns: the direction û turns as `dû/dt = û × Pω`, so over an interval in which the
/// gyroscope turns by Ω = ∫ω dt, û changes by about `ū × PΩ` (ū: the mean of its two ends).
///
/// The interval, not each sample: a sample's change of û is mostly the sensor's noise (an
/// accelerometer's 0.01 g against a turn of 0.002 rad between two samples at 286 Hz), and summed
/// per sample that noise, not the turning, chose a matrix: BROAD's eleven trials, taken per sample,
/// gave a wrong verdict on eight. An interval ends once the gyroscope has turned 0.15 rad.
///
/// For each candidate the squared error of the prediction is a quadratic in P's nine entries, so
/// its sums (`M`, `b`, `c`: 91 numbers) hold the evidence for all 48 at once. A verdict needs both:
/// - **separation**: every other candidate's prediction differs from the best's by a summed
///   square of at least `minimumSeparation` (rad²), so a candidate that differs only in an axis the
///   turns have not shown (a turn about the direction itself shows nothing) cannot win or lose by noise;
/// - **margin**: the best fits better than each other by at least `minimumMargin` of their
///   separation (1 where the data follow the best exactly, −1 where they follow the other).
/// Thresholds from the noise: 0.5 rad² of separation is some 20 intervals of a full axis, against
/// which 0.01 g of noise moves the margin by about 0.1. On BROAD's eleven trials, with the
/// gyroscope as recorded and mapped four other ways, they gave 20 right verdicts and no wrong
/// one (a margin of 0.3 gave 5 wrong ones: translations and fast turns tilt the specific force).
struct TurnEvidence: Sendable {
    /// The 48 signed permutation matrices, the identity first.
    static let candidates: [Matrix3] = {
        var result: [Matrix3] = []
        let axes = [Vector3(x: 1, y: 0, z: 0), Vector3(x: 0, y: 1, z: 0), Vector3(x: 0, y: 0, z: 1)]
        for i in 0..<3 {
            for j in 0..<3 where j != i {
                for si in [1.0, -1.0] {
                    for sj in [1.0, -1.0] {
                        let r0 = axes[i] * si, r1 = axes[j] * sj
                        result.append(Matrix3(row0: r0, row1: r1, row2: r0.cross(r1)))
                        result.append(Matrix3(row0: r0, row1: r1, row2: r0.cross(r1) * -1))
                    }
                }
            }
        }
        return result
    }()
    /// The candidates' entries, row-major, read without an array's allocation.
    private static let entries: [InlineArray<9, Double>] = candidates.map { matrix in
        let values = matrix.rowMajor
        return InlineArray { values[$0] }
    }

    /// Radians the gyroscope turns across one interval.
    static let intervalTurn = 0.15
    /// The longest interval, ns (a slower turn starts a new one: 0.3 rad/s at least).
    static let longestInterval: Int64 = 500_000_000
    /// The longest gap between two samples of one interval, ns.
    static let longestGap: Int64 = 100_000_000
    var minimumSeparation = 0.5
    var minimumMargin = 0.6

    /// Σ JᵀSᵀSJ, Σ JᵀSᵀ·seen and Σ |seen|² (S: ū's cross product, J: P ↦ PΩ), row-major P.
    private var m = InlineArray<81, Double>(repeating: 0)
    private var b = InlineArray<9, Double>(repeating: 0)
    private var c = 0.0
    private var start: Vector3?
    private var startTime: Int64 = 0
    private var lastTime: Int64 = 0
    private var turn = Vector3.zero

    /// A sample that does not show the direction (the device accelerating): the interval under way is dropped.
    mutating func interrupt() { start = nil }

    /// Takes the direction `u` (a unit vector) and the gyroscope's rate `ω` (rad/s) at `t` ns;
    /// returns whether an interval closed (and a verdict may be due).
    mutating func add(direction u: Vector3, rotationRate ω: Vector3, at t: Int64) -> Bool {
        // Saturating (`TimestampArithmetic`): a replay's stamps may lie anywhere in Int64, and a gap of
        // any size restarts (wrapped, Int64.max after Int64.min was a step of −1 ns, and went on).
        guard let first = start, t > lastTime, t.nanoseconds(since: lastTime) < Self.longestGap,
            t.nanoseconds(since: startTime) <= Self.longestInterval
        else {
            (start, startTime, lastTime, turn) = (u, t, t, .zero)
            return false
        }
        turn = turn + ω * t.seconds(since: lastTime)
        lastTime = t
        guard turn.squaredLength >= Self.intervalTurn * Self.intervalTurn else { return false }
        let seen = u - first
        let sum = u + first
        let mid = sum * (1 / sum.length)
        let r = seen.cross(mid)  // Sᵀ·seen
        let o: InlineArray<3, Double> = [turn.x, turn.y, turn.z], n: InlineArray<3, Double> = [mid.x, mid.y, mid.z]
        let rs: InlineArray<3, Double> = [r.x, r.y, r.z]
        // (SᵀS)ᵢₖ = δᵢₖ − ūᵢūₖ, and P's entry (i, j) meets Ωⱼ.
        for i in 0..<3 {
            for j in 0..<3 {
                b[3 * i + j] += rs[i] * o[j]
                for k in 0..<3 {
                    let projection = (i == k ? 1 : 0) - n[i] * n[k]
                    for l in 0..<3 { m[(3 * i + j) * 9 + 3 * k + l] += projection * o[j] * o[l] }
                }
            }
        }
        c += seen.squaredLength
        (start, startTime, turn) = (u, t, .zero)
        return true
    }

    /// The index in `candidates` of the one the evidence settles on, or nil while it does not.
    func decision() -> Int? {
        let entries = Self.entries
        var best = 0, bestError = Double.infinity
        for index in entries.indices {
            let e = error(entries[index])
            if e < bestError { (best, bestError) = (index, e) }
        }
        for index in entries.indices where index != best {
            var difference = entries[index]
            for i in 0..<9 { difference[i] -= entries[best][i] }
            let separation = quadratic(difference)
            guard separation >= minimumSeparation, (error(entries[index]) - bestError) / separation >= minimumMargin else { return nil }
        }
        return best
    }

    /// The summed squared error of the prediction of the candidate whose entries are `p`: c − 2 b·p + pᵀMp.
    private func error(_ p: InlineArray<9, Double>) -> Double {
        var linear = 0.0
        for i in 0..<9 { linear += b[i] * p[i] }
        return c - 2 * linear + quadratic(p)
    }

    /// dᵀMd: for the difference of two candidates, how far apart their predictions lie, summed over the intervals.
    private func quadratic(_ d: InlineArray<9, Double>) -> Double {
        var sum = 0.0
        for i in 0..<9 where d[i] != 0 {
            for j in 0..<9 where d[j] != 0 { sum += d[i] * m[9 * i + j] * d[j] }
        }
        return sum
    }
}
