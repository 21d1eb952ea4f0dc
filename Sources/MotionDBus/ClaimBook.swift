/// Who claimed which sensor on D-Bus, as iio-sensor-proxy counts claims: per sender (its unique bus
/// name) and sensor; the first claim starts a sensor, the last release (or the sender leaving the
/// bus) stops it. Pure bookkeeping: the D-Bus service owns one and acts on what it returns.
struct ClaimBook: Sendable, Equatable {
    /// What can be claimed: upstream's sensors, and motiond's own posture (a 2-in-1's hinge) and
    /// presence (a person at the machine).
    enum Sensor: String, Sendable, CaseIterable {
        case accelerometer, light, proximity, compass, posture, presence
    }

    private var claimants: [Sensor: Set<String>] = [:]

    /// The senders holding a claim on `sensor`.
    func claimants(of sensor: Sensor) -> Set<String> { claimants[sensor] ?? [] }

    /// Records a claim; returns whether it is the sensor's first (the sensor is to start). A sender
    /// claiming twice holds one claim, as upstream's does.
    mutating func claim(_ sensor: Sensor, by sender: String) -> Bool {
        let first = claimants(of: sensor).isEmpty
        claimants[sensor, default: []].insert(sender)
        return first
    }

    /// Records a release; returns whether it was the sensor's last claim (the sensor is to stop).
    mutating func release(_ sensor: Sensor, by sender: String) -> Bool {
        guard claimants[sensor]?.remove(sender) != nil else { return false }
        return claimants(of: sensor).isEmpty
    }

    /// Drops every claim of a sender that left the bus; returns the sensors it was the last to hold.
    mutating func remove(_ sender: String) -> [Sensor] {
        Sensor.allCases.filter { claimants(of: $0).contains(sender) && release($0, by: sender) }
    }
}
