/// Near/far from a proximity reading, with hysteresis so that a reading hovering at the near level
/// does not flap: near at or above `nearLevel`, far again only below `nearLevel − hysteresis`.
struct ProximityDetector: Sendable {
    /// Raw reading at and above which something is near; `nil`: no level known, always far.
    var nearLevel: Double?
    /// Width of the band below `nearLevel` in which the state holds: 10 % of the level, at least 1 count.
    var hysteresis: Double { max(1, (nearLevel ?? 0) * 0.1) }
    private(set) var isNear = false

    init(nearLevel: Double?) { self.nearLevel = nearLevel }

    /// Feeds a reading; returns the state after it.
    mutating func update(_ reading: Double) -> Bool {
        guard let nearLevel else { return false }
        if isNear {
            if reading < nearLevel - hysteresis { isNear = false }
        } else if reading >= nearLevel {
            isNear = true
        }
        return isNear
    }
}
