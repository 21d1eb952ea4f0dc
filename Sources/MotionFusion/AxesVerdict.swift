import MotionCore

/// What an axis check (`GyroscopeAxisCheck`, `MagnetometerAxisCheck`) found of a sensor's axes
/// against the sensor it is checked with.
public enum AxesVerdict: Sendable, Equatable {
    /// The axes agree.
    case agree
    /// The sensor's readings are to be multiplied by this matrix (a signed permutation, motiond's
    /// device frame) to agree.
    case disagree(Matrix3)
}
