import MotionCore
import MotionSystem

/// What went wrong in the device layer, naming the device and the attribute or operation.
///
/// Every bad input from sysfs, udev, libiio or the character device ends up as one of these:
/// the device concerned is skipped or retried, and nothing else is affected.
public enum DeviceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// libiio could not build a local context (no IIO devices at all gives this, with ENOENT).
    case contextUnavailable(errno: Int32)
    /// libiio could not reach a network context (iiod at `uri`: refused, unreachable, timed out).
    case networkContextUnavailable(uri: String, errno: Int32)
    /// A board's iiod described its context in a way that is not let through to libiio: too large,
    /// too slow, or malformed (`reason` says which).
    case networkContextRefused(uri: String, reason: String)
    /// A sysfs attribute could not be read or opened (EIO, ENODEV, ENOENT, EACCES, …).
    case attributeUnreadable(device: String, attribute: String, errno: Int32)
    /// A sysfs attribute could not be written (EACCES, EBUSY, EINVAL, …).
    case attributeUnwritable(device: String, attribute: String, errno: Int32)
    /// A sysfs attribute or udev property held something that does not parse.
    case attributeMalformed(device: String, attribute: String, value: String, expected: String)
    /// A `_raw` channel has no `_scale` (per axis or shared), so it cannot be converted to SI.
    case missingScale(device: String, channel: String)
    /// A scan element's type is not one this code can decode.
    case unsupportedScanType(device: String, attribute: String, value: String)
    /// The device is no longer there (removed between enumeration and open, or mid-read).
    case deviceVanished(device: String)
    /// The device exists but has no accelerometer, gyroscope, magnetometer or proximity channel.
    case noMotionChannels(device: String)
    /// A libiio buffer operation failed.
    case bufferFailed(device: String, operation: String, errno: Int32)
    /// A libudev call failed.
    case udevFailed(operation: String, errno: Int32)
    /// A kind of sensor was asked of a device that does not carry it.
    case kindUnavailable(device: String, kind: String)
    /// Readings beyond what any sensor of the kind can measure were dropped (`count` of them).
    case implausibleReading(device: String, kind: String, count: Int)
    /// libiio's context of all devices failed (one device it cannot read fails it whole): this
    /// device was described from its sysfs files and is read polled.
    case describedWithoutLibiio(device: String, errno: Int32)
    /// The driver names no motion event in `events/` (most drivers have none: rotation-and-posture.md).
    case noMotionEvents(device: String)
    /// The driver names no event for the chip functions opened (`ChipFunctions`): they are read at
    /// an interval.
    case noChipEvents(device: String)
    /// The motion events could not be had: opening the character device or its
    /// `IIO_GET_EVENT_FD_IOCTL` failed (`ENODEV`: no event interface; `EBUSY`: another process holds it).
    case eventsRefused(device: String, operation: String, errno: Int32)
    /// The accelerometer moved by `change` m/s² between two heartbeat reads, and no motion event
    /// has come since they were enabled: its interrupt is not wired, or does not fire.
    case eventsSilent(device: String, change: Double)
    /// An HID sensor hub sent `after` reports a second at rest with its accelerometer's change
    /// sensitivity raised, against `before` with it at 0: it ignores it (`HysteresisTrial`).
    case hysteresisIgnored(device: String, before: Double, after: Double)
    /// The tablet-mode switch's uinput device could not be made or written (`operation`: the step).
    case uinputFailed(operation: String, errno: Int32)
    /// Unbinding the device's parent from its driver, or binding it again, failed at `step`.
    case rebindFailed(device: String, step: String, errno: Int32)

    /// Whether it says the device is gone.
    public var isVanished: Bool {
        if case .deviceVanished = self { true } else { false }
    }

    public var description: String {
        switch self {
        case .contextUnavailable(let e):
            "libiio: no local IIO context (\(errnoName(e)))"
        case .networkContextUnavailable(let uri, let e):
            "cannot reach the IIO context \(uri) (\(errnoName(e)))"
        case .networkContextRefused(let uri, let reason):
            "the IIO context \(uri) is refused: \(reason)"
        case .attributeUnreadable(let d, let a, let e):
            "\(d): cannot read \(a) (\(errnoName(e)))"
        case .attributeUnwritable(let d, let a, let e):
            "\(d): cannot write \(a) (\(errnoName(e)))"
        case .attributeMalformed(let d, let a, let v, let x):
            "\(d): \(a) is \(quoted(v)), expected \(x)"
        case .missingScale(let d, let c):
            "\(d): channel \(c) has a raw value but no scale"
        case .unsupportedScanType(let d, let a, let v):
            "\(d): unsupported scan type \(quoted(v)) in \(a)"
        case .deviceVanished(let d):
            "\(d): device vanished"
        case .noMotionChannels(let d):
            "\(d): no accelerometer, gyroscope, magnetometer or proximity channel"
        case .bufferFailed(let d, let op, let e):
            "\(d): buffer \(op) failed (\(errnoName(e)))"
        case .udevFailed(let op, let e):
            "libudev: \(op) failed (\(errnoName(e)))"
        case .kindUnavailable(let d, let k):
            "\(d): has no \(k)"
        case .implausibleReading(let d, let k, let n):
            "\(d): dropped \(n) \(k) reading\(n == 1 ? "" : "s") beyond what such a sensor can measure"
        case .noMotionEvents(let d):
            "\(d): its driver has no motion events"
        case .noChipEvents(let d):
            "\(d): its driver has no events for its step counter, activity or body detection"
        case .eventsRefused(let d, let op, let e):
            "\(d): motion events refused: \(op) failed (\(errnoName(e))\(e == ErrnoValue.busy ? ": another process reads its events" : ""))"
        case .eventsSilent(let d, let change):
            "\(d): moved by \(Int((change / Units.standardGravity * 1000).rounded())) mg between two heartbeat reads, and no motion event has come: its interrupt is not wired or does not fire"
        case .hysteresisIgnored(let d, let before, let after):
            "\(d): the sensor hub ignores its hysteresis: \(perSecond(before)) reports/s at rest with it at 0, \(perSecond(after)) with it raised"
        case .uinputFailed(let op, let e):
            "uinput: \(op) failed (\(errnoName(e)))"
        case .rebindFailed(let d, let step, let e):
            "\(d): cannot rebind its driver: \(step) failed (\(errnoName(e)))"
        case .describedWithoutLibiio(let d, let e):
            "\(d): libiio cannot read this machine's IIO devices (\(errnoName(e)): one of them is odd); read polled from sysfs"
        }
    }

    /// Whether the error means the device is gone (as opposed to misbehaving).
    public var meansDeviceGone: Bool {
        switch self {
        case .deviceVanished: true
        case .attributeUnreadable(_, _, let e), .bufferFailed(_, _, let e):
            e == ErrnoValue.noSuchDevice || e == ErrnoValue.noSuchFile || e == ErrnoValue.noSuchDeviceOrAddress
        default: false
        }
    }
}

private func perSecond(_ rate: Double) -> String {
    String(Double((rate * 10).rounded()) / 10)
}

private func quoted(_ s: String) -> String {
    "\"" + String(s.prefix(64)).replacingNewlines + "\""
}

extension String {
    fileprivate var replacingNewlines: String {
        String(unicodeScalars.map { $0 == "\n" ? "⏎" : Character($0) })
    }
}
