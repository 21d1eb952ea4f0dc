#if canImport(Glibc)
import Glibc
#endif
import MotionCore

/// Estimates the true sampling period of a sensor from its timestamps, for integrating its samples.
///
/// A MEMS IMU samples on its own oscillator, at a rate that is steady but may be off its nominal one
/// by a few per cent; the host stamps each sample when it learns of it (the data-ready interrupt, a
/// FIFO drain, a poll), late by a varying amount. So the jitter is in the stamps, not in the
/// intervals the sensor measured over, and integrating a gyroscope over each difference of stamps
/// turns that jitter into attitude error: ±2 ms on a 100 Hz IMU makes each step up to 40 % long or
/// short, and in a shaken device the errors add up to degrees.
///
/// The period is the slope of the stamps against the sample count, fitted by exponentially weighted
/// least squares: the fit that white jitter calls for, its slope's error falling as n^(-3/2), and
/// the weights let it follow the oscillator's slow drift. A lost sample (an interval near two
/// periods) advances the count by two, so the fit goes on across it.
///
/// Parameters:
/// - `tau` 10 s: the weights' time constant. An oscillator drifts with temperature, over minutes;
///   at 100 Hz the fit then spans some 1000 stamps, and ±2 ms of jitter leaves the period off by
///   well under 0.01 %.
/// - `minimumSpan` 0.5 s: until the fit spans this long, the nominal period is used (two stamps
///   would give the period only to the jitter over one period).
/// - `maximumGap` 5 periods: a longer interval (a suspend, a stall, a clock jump) is not integrated
///   over, since the rate during it is unknown: the step is one period, and the fit starts again, as
///   a resumed sensor may run on a restarted clock.
struct SamplingPeriodEstimator: Sendable, Codable, Equatable {
    struct Parameters: Sendable, Codable, Equatable {
        var tau = 10.0
        var minimumSpan = 0.5
        var maximumGap = 5.0
    }

    let parameters: Parameters
    // The weight each older stamp keeps per new one, e^(−T/τ) at the nominal period T: a few per cent
    // off the true period changes τ by as much, and saves an exponential per sample.
    private let forgetting: Double
    /// The estimated period, s: the nominal one, or after a restart the last estimate, until the fit
    /// spans `minimumSpan`.
    private(set) var period: Double
    private var lastTimestamp: Int64?
    /// Whether the last interval was one period after the sample before it (not the first, not
    /// across a lost sample or a gap).
    private(set) var followsLastSample = false
    private var firstTimestamp: Int64 = 0
    // The fit: the count of the last sample (periods since the first stamp), the weights' sum, the
    // weighted means of count and stamp (s since the first), and the weighted sums of squares.
    private var count = 0.0
    private var weight = 0.0
    private var countMean = 0.0
    private var stampMean = 0.0
    private var countVariance = 0.0
    private var covariance = 0.0

    /// - Parameter nominalPeriod: the period the sensor was set to, s.
    init(nominalPeriod: Double, parameters: Parameters = .init()) {
        self.parameters = parameters
        period = nominalPeriod
        forgetting = exp(-nominalPeriod / parameters.tau)
    }

    /// The interval to integrate the sample stamped `timestamp` (ns) over, s: the periods since the
    /// last sample.
    mutating func interval(to timestamp: Int64) -> Double {
        followsLastSample = false
        guard let last = lastTimestamp else {
            restart(at: timestamp)
            return period
        }
        lastTimestamp = timestamp
        // Saturating (`TimestampArithmetic`): wrapping turned a jump back of 2^64 − 2 ns into a step of
        // 2 ns; saturated, any step back or jump is a gap.
        let difference = timestamp.seconds(since: last)
        guard difference > 0 && difference <= parameters.maximumGap * period else {
            restart(at: timestamp)
            return period
        }
        // Rounded by truncation (the ratio is at most `maximumGap`): `rounded()` is a call to libm.
        let periods = max(1, Double(Int(difference / period + 0.5)))
        // The interval is counted in the period fitted up to the last sample, so that the fit's new
        // slope (a division) is off the chain the gyroscope's integration waits for: a steady fit
        // moves by parts in 10⁷ a sample, and the first fitted period counts one sample later.
        let interval = periods * period
        followsLastSample = periods == 1
        count += periods
        fit(count: count, stamp: timestamp.seconds(since: firstTimestamp))
        if count * period >= parameters.minimumSpan && countVariance > 0 {
            period = covariance / countVariance
        }
        return interval
    }

    // Exponentially weighted Welford update of the means and sums of squares: stable for any length
    // of run, since only deviations from the means are squared.
    @inline(__always)
    private mutating func fit(count k: Double, stamp t: Double) {
        weight = forgetting * weight + 1
        let share = 1 / weight
        countVariance *= forgetting
        covariance *= forgetting
        let countDeviation = k - countMean
        countMean += countDeviation * share
        stampMean += (t - stampMean) * share
        countVariance += countDeviation * (k - countMean)
        covariance += countDeviation * (t - stampMean)
    }

    private mutating func restart(at timestamp: Int64) {
        lastTimestamp = timestamp
        firstTimestamp = timestamp
        count = 0
        weight = 0
        countMean = 0
        stampMean = 0
        countVariance = 0
        covariance = 0
        fit(count: 0, stamp: 0)
    }
}
