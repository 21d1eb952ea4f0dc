/// How far the screen leans back or forward, with iio-sensor-proxy 3.6's names.
public enum ScreenTilt: String, Sendable, Hashable, Codable, CaseIterable {
    /// Lying flat, screen up.
    case faceUp = "face-up"
    /// Leaning back: the screen faces somewhat up.
    case tiltedUp = "tilted-up"
    /// Upright.
    case vertical
    /// Leaning forward: the screen faces somewhat down.
    case tiltedDown = "tilted-down"
    /// Lying flat, screen down.
    case faceDown = "face-down"
}
