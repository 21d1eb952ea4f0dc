/// Arithmetic on sample timestamps that never traps.
///
/// A timestamp comes from a device (an IIO buffer's timestamp channel, an iiod `network_sensors`
/// board, a recording) and is untrusted: any Int64 at all, jumping back and forth by 2^63. Hence
/// motiond's rule: two timestamps are never subtracted, nor a duration added to one, with the
/// trapping `-` and `+` (Int64.max − Int64.min traps) nor with the wrapping `&-` (which turns a jump
/// back of 2^64 − 2 ns into a step of 2 ns forward); these saturate at Int64's bounds instead. A
/// difference that does not fit is ±292 years, which every filter treats as it treats a step back or
/// any jump beyond its longest gap: as a gap, after which it starts over. One overflow check each,
/// so the per-sample path stays allocation-free and as fast.
extension Int64 {
    /// `self − earlier`, ns: saturated at `Int64.min` or `Int64.max` where the difference does not fit.
    @inlinable
    public func nanoseconds(since earlier: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(earlier)
        return overflow ? (self < earlier ? .min : .max) : difference
    }

    /// `self − earlier` in seconds (both in ns); a difference beyond Int64 reads as ±9.2e9 s.
    @inlinable
    public func seconds(since earlier: Int64) -> Double {
        Double(nanoseconds(since: earlier)) * 1e-9
    }

    /// `self + duration` (both in ns): saturated at `Int64.min` or `Int64.max` where the sum does not fit.
    @inlinable
    public func saturatingAdvanced(by duration: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(duration)
        return overflow ? (duration < 0 ? .min : .max) : sum
    }
}
