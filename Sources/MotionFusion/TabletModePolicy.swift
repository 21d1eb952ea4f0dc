import MotionCore

/// When a convertible is a tablet, from its hinge: past `onAngle` (the display folded beyond flat,
/// stood as a tent or folded back: `HingeMode.tent` begins at 200°) the keyboard is out of reach;
/// back below `offAngle` it is a laptop again. The 20° between them keep a hinge held near the
/// boundary from flapping. Two kinds of angle keep the state as it is:
/// - the display lying flat (face up or down): a convertible on a table lies opened flat (180°, where
///   a hand pressing on one half tips the angle across the boundaries) or folded (below);
/// - within `parallelLimit` of 0° or 360°, the halves parallel: shut and folded right back read the
///   same gravity in both halves (60-sensor.hwdb's note on `ACCEL_LOCATION=base`), so the angle says
///   nothing of which; a shut lid is the lid switch's to report. Only the first angle, before any
///   other has set the state, is taken there as the estimator gives it.
public struct TabletModePolicy: Sendable, Equatable {
    /// Degrees at or past which it is a tablet.
    public var onAngle = 210.0
    /// Degrees at or below which it is a laptop again.
    public var offAngle = 190.0
    /// Degrees from 0° or 360° within which the halves count as parallel (`HingeEstimator.foldedLimit`).
    public var parallelLimit = 20.0
    /// Whether it is a tablet now (false until an angle says otherwise).
    public private(set) var isTablet = false
    /// Whether an angle has set the state yet.
    private var decided = false

    public init() {}

    /// Takes a hinge angle (degrees: 0 shut, 180 flat, 360 folded back) and whether the display lies
    /// flat; returns the new state when it changes.
    public mutating func update(angle: Double, displayFlat: Bool) -> Bool? {
        guard !displayFlat else { return nil }
        let parallel = angle < parallelLimit || angle > 360 - parallelLimit
        guard !(parallel && decided) else { return nil }
        decided = true
        let next = isTablet ? angle > offAngle : angle >= onAngle
        guard next != isTablet else { return nil }
        isTablet = next
        return next
    }
}
