/// How a 2-in-1's display stands against its base.
public enum HingeMode: String, Sendable, Hashable, Codable, CaseIterable {
    /// Folded shut, keyboard up.
    case closed
    /// Opened as a laptop (20° to 200°).
    case laptop
    /// Opened past flat: standing as a tent or a stand (200° to 330°).
    case tent
    /// Folded back, the keyboard underneath (beyond 330°).
    case tablet
}
