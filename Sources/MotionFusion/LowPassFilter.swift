#if canImport(Glibc)
import Glibc
#endif
import MotionCore

/// A second-order Butterworth low-pass filter of a vector or matrix, parametrised by its time constant.
///
/// Parameters: `tau` (s) — the cut-off frequency is √2 / (2π τ), so that the filter settles like a
/// first-order filter of time constant τ but rejects high frequencies at 40 dB per decade;
/// `period` (s) — the sampling period the coefficients are made for.
///
/// Until `tau` seconds of samples have come in, the output is their plain mean, and the filter then
/// starts from that mean: a cold filter neither lags from zero nor rings.
struct LowPassFilter<Value: FilterValue>: Sendable, Codable, Equatable {
    /// Coefficients: numerator b0, b1, b2 and denominator a1, a2 (a0 = 1).
    struct Coefficients: Sendable, Codable, Equatable {
        var b0, b1, b2, a1, a2: Double

        init(tau: Double, period: Double) {
            let cutoff = 2.0.squareRoot() / (2 * Double.pi * tau)
            let c = tan(Double.pi * cutoff * period)
            let d = c * c + 2.0.squareRoot() * c + 1
            b0 = c * c / d
            b1 = 2 * b0
            b2 = b0
            a1 = 2 * (c * c - 1) / d
            a2 = (1 - 2.0.squareRoot() * c + c * c) / d
        }
    }

    let tau: Double
    let period: Double
    let coefficients: Coefficients
    // Transposed direct form II state, per component.
    private var s0 = Value.zero
    private var s1 = Value.zero
    // Warm-up: the running mean until `tau` seconds have been seen.
    private var warmUpCount = 0
    private var warmUpSum = Value.zero
    /// Whether the warm-up is over.
    private(set) var isWarm = false
    /// Whether any sample has come in.
    var hasInput: Bool { isWarm || warmUpCount > 0 }
    private(set) var output = Value.zero

    init(tau: Double, period: Double) {
        self.tau = tau
        self.period = period
        coefficients = Coefficients(tau: tau, period: period)
    }

    /// The filter for samples now `period` s apart, going on from where this one is: its output is
    /// kept as the steady state of the new coefficients. A cold filter keeps its warm-up mean, its
    /// samples counted as the new samples that would span the same time (the mean is over time).
    func atPeriod(_ period: Double) -> LowPassFilter {
        var next = LowPassFilter(tau: tau, period: period)
        if warmUpCount > 0 {
            next.warmUpCount = max(1, Int((Double(warmUpCount) * self.period / period).rounded()))
            next.warmUpSum = warmUpSum * (Double(next.warmUpCount) / Double(warmUpCount))
        }
        next.output = output
        if isWarm { next.settle(at: output) }
        return next
    }

    /// Goes on as if it had been fed `value` for ever: its output and state are that steady state.
    mutating func settle(at value: Value) {
        output = value
        isWarm = true
        s0 = value * (1 - coefficients.b0)
        s1 = value * (coefficients.b2 - coefficients.a2)
    }

    /// Feeds one sample; returns the filtered value.
    @inline(__always)
    mutating func update(_ x: Value) -> Value {
        if !isWarm {
            warmUpCount += 1
            warmUpSum = warmUpSum + x
            output = warmUpSum * (1 / Double(warmUpCount))
            // Then the steady state for a constant input equal to the mean.
            if Double(warmUpCount) * period >= tau { settle(at: output) }
            return output
        }
        let c = coefficients
        let y = x * c.b0 + s0
        s0 = x * c.b1 - y * c.a1 + s1
        s1 = x * c.b2 - y * c.a2
        output = y
        return y
    }
}

/// The gain of a first-order low-pass filter with time constant `tau` (s) at sampling period `period`
/// (s): 1 − e^(−period/τ); 0 for a negative τ (off), 1 for τ = 0 (no filtering).
func firstOrderGain(tau: Double, period: Double) -> Double {
    if tau < 0 { return 0 }
    if tau == 0 { return 1 }
    return 1 - exp(-period / tau)
}

/// What a `LowPassFilter` can filter: a value of a vector space.
protocol FilterValue: Sendable, Codable, Equatable {
    static var zero: Self { get }
    static func + (a: Self, b: Self) -> Self
    static func - (a: Self, b: Self) -> Self
    static func * (a: Self, k: Double) -> Self
}

extension Vector3: FilterValue {}
extension Matrix3: FilterValue {}
