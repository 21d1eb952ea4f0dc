/// The screen orientation, as iio-sensor-proxy names it, plus lying face up or down.
public enum ScreenOrientation: String, Sendable, Hashable, Codable, CaseIterable {
    /// Upright, the top edge up.
    case normal
    /// Upside down, the bottom edge up.
    case bottomUp = "bottom-up"
    /// On its right edge, the left edge up.
    case leftUp = "left-up"
    /// On its left edge, the right edge up.
    case rightUp = "right-up"
    /// Lying flat, screen up.
    case faceUp = "face-up"
    /// Lying flat, screen down.
    case faceDown = "face-down"
}
