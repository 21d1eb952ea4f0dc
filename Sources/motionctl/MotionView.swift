import Foundation
import MotionClient
import MotionCore

/// What `watch` and `get` show: the latest value of every stream, as lines of text.
struct MotionView {
    var motion: MotionMessage?
    var accelerometer: AccelerometerMessage?
    var gyroscope: GyroscopeMessage?
    var magnetometer: MagnetometerMessage?
    var proximity: ProximityMessage?
    var light: LightMessage?
    var orientation: OrientationMessage?
    var tilt: TiltMessage?
    var hinge: HingeMessage?
    var pedometer: PedometerMessage?
    var activity: ActivityMessage?
    var altitude: AltitudeMessage?
    var gesture: GestureMessage?
    /// The first altitude shown, m: the relative altitude is counted from it, as CoreMotion's is
    /// from the start of its updates.
    var startAltitude: Double?
    var dropped = 0
    /// Timestamps of the last second of updates of the fastest stream, to show the real rate, ns.
    private var recent: [Int64] = []

    mutating func take(_ snapshot: Snapshot) {
        motion = snapshot.motion ?? motion
        accelerometer = snapshot.accelerometer ?? accelerometer
        gyroscope = snapshot.gyroscope ?? gyroscope
        magnetometer = snapshot.magnetometer ?? magnetometer
        proximity = snapshot.proximity ?? proximity
        light = snapshot.light ?? light
        orientation = snapshot.orientation ?? orientation
        tilt = snapshot.tilt ?? tilt
        hinge = snapshot.hinge ?? hinge
        pedometer = snapshot.pedometer ?? pedometer
        activity = snapshot.activity ?? activity
        if let m = snapshot.altitude { take(altitude: m) }
        gesture = snapshot.gesture ?? gesture
    }

    private mutating func take(altitude message: AltitudeMessage) {
        altitude = message
        if startAltitude == nil { startAltitude = message.altitude }
    }

    mutating func take(_ update: MotionClient.Update) {
        switch update {
        case .motion(let m):
            motion = m
            count(m.timestamp)
        case .accelerometer(let m):
            accelerometer = m
            if motion == nil { count(m.timestamp) }
        case .gyroscope(let m): gyroscope = m
        case .magnetometer(let m): magnetometer = m
        case .proximity(let m): proximity = m
        case .light(let m): light = m
        case .orientation(let m): orientation = m
        case .tilt(let m): tilt = m
        case .hinge(let m): hinge = m
        case .pedometer(let m): pedometer = m
        case .activity(let m): activity = m
        case .altitude(let m): take(altitude: m)
        case .gesture(let m): gesture = m
        case .dropped(_, let n): dropped += n
        }
    }

    private mutating func count(_ timestamp: Int64) {
        // A clock that went back starts the count over; timestamps are the server's, any Int64.
        if let last = recent.last, timestamp < last { recent.removeAll() }
        recent.append(timestamp)
        let since = timestamp.saturatingAdvanced(by: -1_000_000_000)
        recent.removeAll { $0 < since }
    }

    /// How many updates the rate is counted over now.
    var windowCount: Int { recent.count }

    /// Updates per second, over the last second of sample timestamps.
    var rate: Double? {
        guard recent.count > 1, let first = recent.first, let last = recent.last, last > first else { return nil }
        return Double(recent.count - 1) / last.seconds(since: first)
    }

    func render(color: Bool) -> [String] {
        func vector(_ v: Vector3, _ digits: Int = 3) -> String {
            [v.x, v.y, v.z].map { String(format: "%+.\(digits)f", $0) }.joined(separator: "  ")
        }
        func degrees(_ radians: Double) -> String { String(format: "%+8.2f°", radians * 180 / .pi) }
        var lines: [String] = []
        let rateText = rate.map { String(format: "%.1f Hz", $0) } ?? "–"
        lines.append("motiond   rate \(rateText)   dropped \(dropped)")
        if let m = motion {
            let a = m.attitude
            let unavailable = m.unavailable ?? []
            let yaw = unavailable.contains(.yaw) ? "      –  " : degrees(a.yaw)
            lines.append("attitude        roll \(degrees(a.roll))  pitch \(degrees(a.pitch))  yaw \(yaw)   (\(m.frame.rawValue))")
            let q = a.quaternion
            lines.append(String(format: "quaternion      w %+.4f  x %+.4f  y %+.4f  z %+.4f", q.w, q.x, q.y, q.z))
            lines.append("gravity         \(vector(m.gravity)) g")
            lines.append("user accel      \(vector(m.userAcceleration)) g")
            if !unavailable.contains(.rotationRate) { lines.append("rotation rate   \(vector(m.rotationRate)) rad/s") }
            if !unavailable.contains(.magneticField) {
                lines.append("magnetic field  \(vector(m.magneticField.field, 1)) µT   accuracy \(m.magneticField.accuracy.rawValue)")
            }
            if let heading = m.heading { lines.append(String(format: "heading         %.1f°", heading)) }
            for reason in unavailable.reasons { lines.append("unavailable     \(reason)") }
        }
        if let m = accelerometer { lines.append("accelerometer   \(vector(m.acceleration)) g") }
        if let m = gyroscope { lines.append("gyroscope       \(vector(m.rotationRate)) rad/s") }
        if let m = magnetometer { lines.append("magnetometer    \(vector(m.magneticField, 1)) µT") }
        if let m = proximity { lines.append("proximity       \(m.near ? "near" : "far") (\(m.value.formatted(digits: 1)))") }
        if let m = light { lines.append("light           \(m.illuminance.formatted(digits: 1)) \(m.unit.rawValue)") }
        if let m = orientation { lines.append("orientation     \(m.orientation.rawValue)") }
        if let m = tilt { lines.append("tilt            \(m.tilt.rawValue)") }
        if let m = hinge { lines.append(String(format: "hinge           %.1f°   ", m.angle) + m.mode.rawValue) }
        if let m = pedometer {
            let cadence = m.cadence.map { String(format: "   cadence %.2f steps/s", $0) } ?? ""
            lines.append(String(format: "pedometer       %d steps   %.1f m", m.steps, m.distance) + cadence)
        }
        if let m = activity { lines.append("activity        \(m.activity.rawValue) (\(m.confidence.rawValue) confidence)") }
        if let m = gesture { lines.append("gesture         \(m.gesture.rawValue) (last)") }
        if let m = altitude {
            let relative = String(format: "   relative %+.2f m", m.altitude - (startAltitude ?? m.altitude))
            let precision = m.precision.map { String(format: "   ±%.2f m", $0) } ?? ""
            lines.append(String(format: "altitude        %.2f m   %.4f kPa", m.altitude, m.pressure) + relative + precision)
        }
        return lines
    }
}
