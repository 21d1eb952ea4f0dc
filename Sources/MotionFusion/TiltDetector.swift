#if canImport(Glibc)
import Glibc
#endif
import MotionCore

/// The screen's tilt from gravity: the angle θ of the screen above the vertical (θ > 0 when the
/// screen faces up), in five bands, with hysteresis so that a device held at a boundary does not flap.
///
/// Parameters:
/// - `verticalLimit` 20°: |θ| up to this is `vertical`;
/// - `flatLimit` 70°: |θ| beyond this is `face-up` / `face-down` (iio-sensor-proxy's own fake
///   accelerometer at (0, −300, 950) counts, θ = 72.5°, is `face-up` for it);
/// - `hysteresis` 5°: a state is left only this far past its boundary.
public struct TiltDetector: Sendable, Codable, Equatable {
    public var verticalLimit = 20.0 * .pi / 180
    public var flatLimit = 70.0 * .pi / 180
    public var hysteresis = 5.0 * .pi / 180
    /// The current tilt, `nil` before the first update.
    public private(set) var state: ScreenTilt?

    /// A detector with the default parameters.
    public init() {}

    /// Feeds gravity in g (CoreMotion's sign: (0, 0, −1) face up); returns the state after it.
    @discardableResult
    public mutating func update(gravity: Vector3) -> ScreenTilt {
        let length = gravity.length
        guard length > 0.1 else { return state ?? .vertical }  // free fall: no opinion
        let theta = asin(max(-1, min(1, -gravity.z / length)))
        let candidate = Self.band(theta, vertical: verticalLimit, flat: flatLimit)
        guard let current = state, current != candidate else {
            state = candidate
            return candidate
        }
        // Moved out of `current`'s band: stay unless it is also out with the boundaries widened.
        let widened = Self.band(theta, vertical: verticalLimit + (current == .vertical ? hysteresis : -hysteresis),
                                flat: flatLimit + (current == .faceUp || current == .faceDown ? -hysteresis : hysteresis))
        if widened == current { return current }
        state = candidate
        return candidate
    }

    private static func band(_ theta: Double, vertical: Double, flat: Double) -> ScreenTilt {
        switch theta {
        case flat...: .faceUp
        case vertical...: .tiltedUp
        case (-vertical)...: .vertical
        case (-flat)...: .tiltedDown
        default: .faceDown
        }
    }
}
