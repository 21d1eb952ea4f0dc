import FoundationEssentials
import MotionClientCore
import MotionCore

/// What `watch` and `get` show: the latest value of every stream, as lines of text.
struct MotionView {
    /// The latest message of each stream, kept by stream as the catalogue lists them.
    private(set) var latest = Snapshot(id: nil)
    /// The first altitude shown, m: the relative altitude is counted from it, as CoreMotion's is
    /// from the start of its updates.
    var startAltitude: Double?
    var dropped = 0
    /// Timestamps of the last second of updates of the fastest stream, to show the real rate, ns.
    private var recent: [Int64] = []

    /// The order `render` shows the streams in: motionctl's own, as before the catalogue (gesture
    /// before altitude), since `StreamKind`'s order is the SNAPSHOT's keys' and cannot change. A stream
    /// not listed follows, in the catalogue's order, so that a new stream shows without an edit here.
    static let order: [StreamKind] = {
        let listed: [StreamKind] = [
            .motion, .accelerometer, .gyroscope, .magnetometer, .proximity, .light, .orientation, .tilt, .hinge, .pedometer, .activity,
            .gesture, .significantMotion, .presence, .altitude,
        ]
        return listed + StreamKind.allCases.filter { !listed.contains($0) }
    }()

    mutating func take(_ snapshot: Snapshot) {
        for stream in StreamKind.allCases {
            if let message = snapshot[stream] { keep(message) }
        }
    }

    private mutating func keep(_ message: AnyServerMessage) {
        latest.insert(message)
        if case .altitude(let m) = message, startAltitude == nil { startAltitude = m.altitude }
    }

    mutating func take(_ update: MotionClient.Update) {
        switch update {
        case .motion(let m): count(m.timestamp)
        case .accelerometer(let m) where latest.motion == nil: count(m.timestamp)
        case .dropped(let m): dropped += m.count
        default: break
        }
        keep(update)
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

    /// The rate line, then each stream's lines in `order`.
    func render() -> [String] {
        let rateText = rate.map { $0.fixed(1) + " Hz" } ?? "–"
        return ["motiond   rate \(rateText)   dropped \(dropped)"] + Self.order.flatMap { latest[$0].map(lines) ?? [] }
    }

    private func vector(_ v: Vector3, _ digits: Int = 3) -> String {
        [v.x, v.y, v.z].map { $0.fixed(digits, sign: true) }.joined(separator: "  ")
    }

    private func degrees(_ radians: Double) -> String { (radians * 180 / .pi).fixed(2, sign: true, width: 8) + "°" }

    /// A stream's lines; a stream this view has no words for shows its protocol line.
    private func lines(_ message: AnyServerMessage) -> [String] {
        switch message {
        case .motion(let m):
            let a = m.attitude
            let unavailable = m.unavailable ?? []
            let yaw = unavailable.contains(.yaw) ? "      –  " : degrees(a.yaw)
            var lines = ["attitude        roll \(degrees(a.roll))  pitch \(degrees(a.pitch))  yaw \(yaw)   (\(m.frame.rawValue))"]
            let q = a.quaternion
            lines.append("quaternion      w \(q.w.fixed(4, sign: true))  x \(q.x.fixed(4, sign: true))  y \(q.y.fixed(4, sign: true))  z \(q.z.fixed(4, sign: true))")
            lines.append("gravity         \(vector(m.gravity)) g")
            lines.append("user accel      \(vector(m.userAcceleration)) g")
            if !unavailable.contains(.rotationRate) { lines.append("rotation rate   \(vector(m.rotationRate)) rad/s") }
            if !unavailable.contains(.magneticField) {
                lines.append("magnetic field  \(vector(m.magneticField.field, 1)) µT   accuracy \(m.magneticField.accuracy.rawValue)")
            }
            if let heading = m.heading { lines.append("heading         \(heading.fixed(1))°") }
            for reason in unavailable.reasons { lines.append("unavailable     \(reason)") }
            return lines
        case .accelerometer(let m): return ["accelerometer   \(vector(m.acceleration)) g"]
        case .gyroscope(let m): return ["gyroscope       \(vector(m.rotationRate)) rad/s"]
        case .magnetometer(let m): return ["magnetometer    \(vector(m.magneticField, 1)) µT"]
        case .proximity(let m): return ["proximity       \(m.near ? "near" : "far") (\(m.value.formatted(digits: 1)))"]
        case .light(let m): return ["light           \(m.illuminance.formatted(digits: 1)) \(m.unit.rawValue)"]
        case .orientation(let m): return ["orientation     \(m.orientation.rawValue)"]
        case .tilt(let m): return ["tilt            \(m.tilt.rawValue)"]
        case .hinge(let m): return ["hinge           \(m.angle.fixed(1))°   " + m.mode.rawValue]
        case .pedometer(let m):
            let cadence = m.cadence.map { "   cadence \($0.fixed(2)) steps/s" } ?? ""
            return ["pedometer       \(m.steps) steps   \(m.distance.fixed(1)) m" + cadence]
        case .activity(let m): return ["activity        \(m.activity.rawValue) (\(m.confidence.rawValue) confidence)"]
        case .gesture(let m): return ["gesture         \(m.gesture.rawValue) (last)"]
        case .significantMotion(let m): return ["sig. motion     fired (\(m.source.rawValue))"]
        case .presence(let m):
            // Attention and distance only where the sensor gives them (protocol 1.11).
            let attention = m.attention.map { $0 ? "   attentive" : "   inattentive" } ?? ""
            let distance = m.distance.map { "   \($0.fixed(2)) m" } ?? ""
            return ["presence        \(m.present ? "present" : "absent")" + attention + distance + "   (\(m.source.rawValue))"]
        case .altitude(let m):
            let relative = "   relative \((m.altitude - (startAltitude ?? m.altitude)).fixed(2, sign: true)) m"
            let precision = m.precision.map { "   ±\($0.fixed(2)) m" } ?? ""
            return ["altitude        \(m.altitude.fixed(2)) m   \(m.pressure.fixed(4)) kPa" + relative + precision]
        default:
            guard let stream = message.stream, let body = message.message else { return [] }
            return [stream.rawValue.padded(to: 16) + protocolLine(body)]
        }
    }
}
