/// What the person carrying the device is doing, as CoreMotion's `CMMotionActivity` says it.
public enum MotionActivityKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// The device lies or is held still.
    case stationary
    /// Walking: a steady gait under 2.3 steps/s.
    case walking
    /// Running: a steady gait at 2.3 steps/s and up.
    case running
    /// Reserved (CoreMotion's): not detected by this version.
    case cycling
    /// Reserved (CoreMotion's): not detected by this version.
    case automotive
    /// Anything else, or not yet known.
    case unknown
}

/// How sure a motion activity is, as `CMMotionActivityConfidence`.
public enum MotionActivityConfidence: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
    case low, medium, high

    /// Low before medium before high.
    public static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
