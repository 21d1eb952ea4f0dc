import MotionCore

/// When a convertible is a tablet, from its hinge: past `onAngle` (the display folded beyond flat,
/// stood as a tent or folded back: `HingeMode.tent` begins at 200°) the keyboard is out of reach;
/// back below `offAngle` it is a laptop again. The 20° between them keep a hinge held near the
/// boundary from flapping. Lying flat on a table (the display face up or down) both halves read the
/// same gravity whatever the hinge, so the angle means nothing then and the state is kept.
public struct TabletModePolicy: Sendable, Equatable {
    /// Degrees at or past which it is a tablet.
    public var onAngle = 210.0
    /// Degrees at or below which it is a laptop again.
    public var offAngle = 190.0
    /// Whether it is a tablet now (false until an angle says otherwise).
    public private(set) var isTablet = false

    public init() {}

    /// Takes a hinge angle (degrees: 0 shut, 180 flat, 360 folded back) and whether the display lies
    /// flat; returns the new state when it changes.
    public mutating func update(angle: Double, displayFlat: Bool) -> Bool? {
        guard !displayFlat else { return nil }
        let next = isTablet ? angle > offAngle : angle >= onAngle
        guard next != isTablet else { return nil }
        isTablet = next
        return next
    }
}
