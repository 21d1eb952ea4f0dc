#if canImport(Glibc)
import Glibc
#endif
import MotionCore

/// The hinge angle of a 2-in-1 from its two accelerometers, display and base, both in the device
/// frame. systemd's hwdb defines the base's mount matrix so that, folded shut, the two read the same
/// (60-sensor.hwdb's note on `ACCEL_LOCATION=base`): the angle is then the turn about the hinge, the
/// shared x axis, that takes the base's gravity direction to the display's.
///
/// Parameters:
/// - `tau` 0.2 s: time constant of the low-pass on each accelerometer (a hand on the lid shakes it);
/// - `verticalHingeLimit` 25°: within this of vertical the hinge axis is too close to gravity for
///   the angle to show, and the last one is kept;
/// - `foldedLimit` 20°: nearer than this to 0°/360° the halves lie parallel (mode `closed` below it),
///   and shut reads as folded right back (both halves read the same gravity whichever way the device
///   faces);
/// - `wrapLimit` 45°: the reading wraps at 0°/360° and the hinge does not, so each angle is taken on
///   the side of the last one (a hinge cannot go from 0° to 360° but through 180°), and a reading up
///   to this far past 0° or 360° is the sensors' error and stops there: near the vertical-hinge limit
///   the halves' y-z projections are ~0.42 g, and zero-g offsets of ±80 mg (BMA250E, BMI160 data
///   sheets) turn each half's reading by up to ~11°, ~22° for both. So a tablet held upright or
///   turned screen down stays folded back, and a shut laptop turned over stays shut. Farther past,
///   the hinge moved while its axis was vertical, and the reading is taken as it is;
/// - `keyboardLimit` 30°: with no side yet (the first estimate has the halves parallel), the base's
///   keyboard (−z of its frame) facing up says shut and facing down says folded back, but only while
///   it faces more than this away from the horizon; on edge, no estimate is made until it does.
public struct HingeEstimator: Sendable, Codable, Equatable {
    public var tau = 0.2
    public var verticalHingeLimit = 25.0 * .pi / 180
    public var foldedLimit = 20.0
    /// Degrees past 0° or 360° that a reading may be and still count as the sensors' error (above).
    public var wrapLimit = 45.0
    public var keyboardLimit = 30.0 * .pi / 180
    private var display: LowPassFilter<Vector3>
    private var base: LowPassFilter<Vector3>
    /// The display's low-passed specific force, m/s², in its frame.
    public private(set) var displayForce = Vector3.zero
    /// The base's, as `displayForce`.
    public private(set) var baseForce = Vector3.zero
    /// The angle, degrees in [0, 360]: 0 shut, 90 a laptop's lid upright, 180 flat, 360 folded back.
    public private(set) var angle: Double?
    /// The mode the angle falls in.
    public private(set) var mode: HingeMode?

    /// An estimator for accelerometers sampled at `rate` Hz.
    public init(rate: Double) {
        display = LowPassFilter(tau: tau, period: 1 / rate)
        base = LowPassFilter(tau: tau, period: 1 / rate)
    }

    /// A sample of the display's accelerometer: specific force, m/s².
    public mutating func update(display force: Vector3) {
        displayForce = display.update(force)
        estimate()
    }

    /// A sample of the base's accelerometer: specific force, m/s².
    public mutating func update(base force: Vector3) {
        baseForce = base.update(force)
        estimate()
    }

    private mutating func estimate() {
        let d = displayForce, b = baseForce
        let dLength = d.length, bLength = b.length
        guard dLength > 1, bLength > 1 else { return }
        // The hinge (x) near vertical: gravity has almost no component to turn about it.
        let limit = cos(verticalHingeLimit)
        guard abs(d.x) / dLength < limit, abs(b.x) / bLength < limit else { return }
        var degrees = atan2(b.y * d.z - b.z * d.y, b.y * d.y + b.z * d.z) * 180 / .pi
        if degrees < 0 { degrees += 360 }
        if let last = angle {
            // atan2 wraps at 0°/360°, the hinge does not: take the reading nearest the last angle.
            var step = degrees - last
            if step > 180 { step -= 360 } else if step < -180 { step += 360 }
            let unwrapped = last + step
            // Past 0° or 360° is the halves' play or the sensors' error: the hinge stops there. Farther
            // past than `wrapLimit`, the hinge moved while it could not be followed: take the reading.
            if unwrapped >= -wrapLimit && unwrapped <= 360 + wrapLimit {
                degrees = min(max(unwrapped, 0), 360)
            }
        } else if degrees < foldedLimit || degrees > 360 - foldedLimit {
            // A first estimate with the halves parallel: shut and folded back read alike.
            guard abs(b.z) / bLength > sin(keyboardLimit) else { return }
            let foldedBack = b.z > 0  // the keyboard faces down
            degrees = foldedBack ? (degrees > 180 ? degrees : 360) : (degrees < 180 ? degrees : 0)
        }
        angle = degrees
        mode = degrees < foldedLimit ? .closed : degrees < 200 ? .laptop : degrees < 330 ? .tent : .tablet
    }
}
