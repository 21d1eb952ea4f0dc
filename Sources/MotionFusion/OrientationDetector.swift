#if canImport(Glibc)
import Glibc
#endif
import MotionCore

/// The screen orientation from gravity, as iio-sensor-proxy reports it (normal, bottom-up, left-up,
/// right-up) plus lying face up or face down, with hysteresis so that a device held near a boundary
/// does not flap.
///
/// Parameters:
/// - `flatAngle` 25°: the screen counts as lying flat when its normal is within this angle of the
///   vertical (iio-sensor-proxy uses a similar tilt limit before it stops changing orientation);
/// - `hysteresis` 10°: a new state must be entered this far past the boundary that leaves the old one.
public struct OrientationDetector: Sendable, Codable, Equatable {
    public var flatAngle = 25.0 * .pi / 180
    public var hysteresis = 10.0 * .pi / 180
    /// The current orientation, `nil` before the first update.
    public private(set) var state: ScreenOrientation?

    /// Creates a detector with the default parameters.
    public init() {}

    /// Feeds gravity in g (CoreMotion's sign: (0, 0, −1) face up); returns the state after it.
    @discardableResult
    public mutating func update(gravity: Vector3) -> ScreenOrientation {
        let length = gravity.length
        guard length > 0.1 else { return state ?? .faceUp }  // free fall: no opinion
        let down = gravity * (1 / length)
        // Angle between the screen normal (z) and the vertical, 0 when flat.
        let tilt = acos(min(1, abs(down.z)))
        let wasFlat = state == .faceUp || state == .faceDown
        let flatLimit = wasFlat ? flatAngle + hysteresis / 2 : flatAngle - hysteresis / 2
        if tilt < flatLimit {
            state = down.z < 0 ? .faceUp : .faceDown
            return state!
        }
        // In the screen's plane: the edge that points up is opposite to gravity.
        let angle = atan2(-down.x, -down.y)  // 0: top edge up; +π/2: right edge up
        let candidate: ScreenOrientation
        switch angle {
        case -.pi / 4 ..< .pi / 4: candidate = .normal
        case .pi / 4 ..< 3 * .pi / 4: candidate = .rightUp
        case -3 * .pi / 4 ..< -.pi / 4: candidate = .leftUp
        default: candidate = .bottomUp
        }
        if let current = state, !wasFlat, current != candidate {
            // Stay until the angle is `hysteresis / 2` past the 45° boundary into the new sector.
            let centre: Double = switch candidate {
            case .normal: 0
            case .rightUp: .pi / 2
            case .leftUp: -.pi / 2
            default: .pi
            }
            var offset = abs(angle - centre)
            if offset > .pi { offset = 2 * .pi - offset }
            if offset > .pi / 4 - hysteresis / 2 { return current }
        }
        state = candidate
        return candidate
    }
}
