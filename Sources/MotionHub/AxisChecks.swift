import MotionCore
import MotionFusion

/// Whether the gyroscope's axes agree with the accelerometer's, and then the magnetometer's with the
/// gyroscope's, checked on the device's own turns while a gyroscope is fused, until each gives a
/// verdict (then nothing more is spent on it); each verdict is told once, through `checked`. No I/O:
/// the fusion stage feeds it.
struct AxisChecks {
    /// The gyroscope's check until its verdict; nil: no verdict wanted (no gyroscope fused).
    private var gyroscopeCheck: GyroscopeAxisCheck?
    /// The magnetometer's, fed once the gyroscope's axes agree, on the calibrated field.
    private var magnetometerCheck: MagnetometerAxisCheck?
    /// The accelerometer's last specific force, m/s².
    private var lastSpecificForce: Vector3?
    /// The gyroscope's verdict, once given (for STATUS).
    private(set) var gyroscope: AxesVerdict?
    /// The magnetometer's verdict, once given (for STATUS).
    private(set) var magnetometer: AxesVerdict?
    /// Called once with each verdict, with the sensor checked: the gyroscope or the magnetometer.
    var checked: (_ sensor: SensorKind, AxesVerdict) -> Void = { _, _ in }

    /// A fusion starts: a gyroscope fused (plugged in anew, say) is checked anew, and so is the
    /// magnetometer, whose check knows which way the place's field points (`fieldPointsDown`: its
    /// inclination is positive, nil: no place known).
    mutating func fusionStarts(usesGyroscope: Bool, fieldPointsDown: Bool?) {
        gyroscopeCheck = usesGyroscope ? GyroscopeAxisCheck() : nil
        // Fed only by magnetometer samples: one that comes later is checked too.
        magnetometerCheck = usesGyroscope ? MagnetometerAxisCheck() : nil
        magnetometerCheck?.fieldPointsDown = fieldPointsDown
        if usesGyroscope { (gyroscope, magnetometer) = (nil, nil) }
    }

    /// Takes the accelerometer's specific force, m/s².
    mutating func accelerometer(_ force: Vector3) {
        lastSpecificForce = force
    }

    /// Takes the gyroscope's rate, rad/s, at `t` ns.
    mutating func gyroscope(_ rate: Vector3, at t: Int64) {
        guard gyroscopeCheck != nil, let force = lastSpecificForce else { return }
        gyroscopeCheck!.update(specificForce: force, rotationRate: rate, at: t)
        guard let verdict = gyroscopeCheck!.verdict else { return }
        gyroscopeCheck = nil
        gyroscope = verdict
        checked(.gyroscope, verdict)
    }

    /// Whether the magnetometer's check wants its next sample: it has no verdict yet and the
    /// gyroscope's axes agree.
    var wantsMagnetometer: Bool { magnetometerCheck != nil && gyroscope == .agree }

    /// Takes the calibrated field, µT, with the gyroscope's latest rate, rad/s, at `t` ns: a field still
    /// carrying its offset does not turn as the device does, so only once the calibration fits.
    mutating func magnetometer(calibratedField field: Vector3, rotationRate rate: Vector3, at t: Int64) {
        guard magnetometerCheck != nil, let force = lastSpecificForce else { return }
        magnetometerCheck!.update(field: field, rotationRate: rate, specificForce: force, at: t)
        guard let verdict = magnetometerCheck!.verdict else { return }
        magnetometerCheck = nil
        magnetometer = verdict
        checked(.magnetometer, verdict)
    }
}
