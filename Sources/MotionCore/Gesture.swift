/// A gesture made with the device (the `gesture` stream, docs/protocol.md).
public enum Gesture: String, Sendable, Hashable, Codable, CaseIterable {
    /// Shaken hard for half a second.
    case shake
    /// Picked up after lying still: from a table, a pocket, a bag.
    case pickUp = "pick-up"
    /// Android's significant motion: a walk or run begins.
    case significantMotion = "significant-motion"
    /// The chip's on-body detection: the device was put on or taken in hand (protocol 1.11).
    case onBody = "on-body"
    /// The chip's on-body detection: the device was taken off the body, or put down (protocol 1.11).
    case offBody = "off-body"
}
