import MotionCore

/// The gestures of one accelerometer, as the daemon and `motionctl gestures` find them: shake,
/// pick-up, and significant motion from the step detector's walks.
public struct GestureRecognizer: Sendable {
    private var shake = ShakeDetector()
    private var pickUp = PickUpDetector()
    private var significantMotion = SignificantMotionDetector()

    /// A recognizer with each detector's default parameters.
    public init() {}

    /// Feeds one specific force (m/s², device frame) sampled at `timestamp` (ns), with whether the
    /// step detector, fed the same sample, has a walk under way; calls `gesture` for each gesture the
    /// sample completes.
    public mutating func update(specificForce: Vector3, timestamp: Int64, isWalking: Bool, gesture: (Gesture) -> Void) {
        if shake.update(specificForce: specificForce, timestamp: timestamp) { gesture(.shake) }
        if pickUp.update(specificForce: specificForce, timestamp: timestamp) { gesture(.pickUp) }
        if significantMotion.update(isWalking: isWalking, timestamp: timestamp) { gesture(.significantMotion) }
    }
}
