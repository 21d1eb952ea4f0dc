import MotionCore

/// Turns the raw counts of one sensor's channels into a `SensorSample`: offset and scale to the
/// IIO unit, the driver's factor to SI, then into the device frame (`DeviceFrame`); for proximity, near/far.
struct SampleConverter {
    let kind: SensorKind
    let device: DeviceNumber
    let channels: [ChannelDescriptor]
    private let offset: Vector3
    private let scale: Vector3
    private let mountMatrix: Matrix3
    private var proximity: ProximityDetector
    /// `SensorKind.plausibleMagnitude` squared, in the unit of the samples squared.
    private let largestSquaredMagnitude: Double

    init(sensor: SensorDescriptor, device: DeviceNumber) {
        kind = sensor.kind
        self.device = device
        channels = sensor.channels
        func component(_ i: Int, _ value: (ChannelDescriptor) -> Double) -> Double {
            i < sensor.channels.count ? value(sensor.channels[i]) : 0
        }
        offset = Vector3(x: component(0, \.offset), y: component(1, \.offset), z: component(2, \.offset))
        scale = Vector3(x: component(0, \.scale), y: component(1, \.scale), z: component(2, \.scale))
        mountMatrix = sensor.kind.isVector ? sensor.deviceFrameMatrix : .identity
        proximity = ProximityDetector(nearLevel: sensor.nearLevel)
        largestSquaredMagnitude = sensor.kind.plausibleMagnitude * sensor.kind.plausibleMagnitude
    }

    /// The sample for raw counts `raw` (x, y, z; proximity uses `raw.x`) taken at `timestamp` (ns);
    /// `nil` for a reading no sensor of this kind can produce (beyond `plausibleMagnitude`, or not finite).
    @inline(__always)
    mutating func sample(raw: Vector3, timestamp: Int64) -> SensorSample? {
        let value = Vector3(
            x: (raw.x + offset.x) * scale.x,
            y: (raw.y + offset.y) * scale.y,
            z: (raw.z + offset.z) * scale.z)
        if kind == .proximity {
            return SensorSample(
                kind: kind, device: device, timestamp: timestamp,
                vector: Vector3(x: value.x, y: 0, z: 0), isNear: proximity.update(value.x))
        }
        if kind == .humanPresence { return presence(value, timestamp: timestamp) }
        guard value.squaredLength <= largestSquaredMagnitude else { return nil }  // NaN fails too
        // No gas has a pressure of 0 or less: a glitch, and an altitude no formula gives.
        if kind == .pressure, !(value.x > 0) { return nil }
        // A heading of 360° or of −10° is a direction all the same: kept in [0, 360), as the wire has it.
        if kind == .compass {
            return SensorSample(kind: kind, device: device, timestamp: timestamp, vector: Vector3(x: Units.degreesWithinOneTurn(value.x), y: 0, z: 0))
        }
        return SensorSample(kind: kind, device: device, timestamp: timestamp, vector: mountMatrix * value)
    }

    /// A human-presence sample: each channel's value at its component (the channel's `axis`: x
    /// presence, y distance, z attention), NaN where there is no channel; presence as 0 or 1 whatever
    /// its scale. `nil` when a value is not finite, or a distance or attention is outside
    /// [0, `plausibleMagnitude`] (100 m, 100 %). Out of line: the motion sensors' path stays as small.
    @inline(never)
    private func presence(_ value: Vector3, timestamp: Int64) -> SensorSample? {
        var out = Vector3(x: .nan, y: .nan, z: .nan)
        for c in 0..<min(channels.count, 3) {
            let v = value[Axis(rawValue: c)!]
            guard v.isFinite else { return nil }
            let axis = channels[c].axis ?? .x
            if axis == .x {
                out.x = v != 0 ? 1 : 0
            } else {
                guard v >= 0, v <= kind.plausibleMagnitude else { return nil }
                out[axis] = v
            }
        }
        return SensorSample(kind: kind, device: device, timestamp: timestamp, vector: out)
    }
}
