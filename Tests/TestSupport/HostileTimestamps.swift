/// Timestamps a hostile or broken device may hand the daemon (any Int64 is possible): the extremes,
/// jumps of 2^63 each way, ±2^62 by turns, and a clock that runs backwards, in that order.
public let hostileTimestamps: [Int64] = {
    var stamps: [Int64] = [.min, .max, 0, .max, .min, .min, 0, .max - 1, .max]
    for k in 0..<8 { stamps.append(k % 2 == 0 ? 1 << 62 : -(1 << 62)) }
    for k in 0..<6 { stamps.append(.max - Int64(k) * 1_500_000_000_000_000_000) }
    stamps += [.min + 1, .min, .max, -1, 1, .min]
    return stamps
}()

/// Every Double stored in `value`, however deep (Mirror walks the stored fields): to check that a
/// message or a filter's output holds no NaN or infinity.
public func storedDoubles(in value: Any) -> [Double] {
    if let double = value as? Double { return [double] }
    return Mirror(reflecting: value).children.flatMap { storedDoubles(in: $0.value) }
}
