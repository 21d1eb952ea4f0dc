/// The parts of the device motion that the machine's sensors cannot give, each with the reason a
/// client is told. A fixed-size set: making and passing one allocates nothing.
public struct UnavailableOutputs: OptionSet, Sendable, Hashable, Codable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The yaw (and with it the heading): needs a magnetometer or a gyroscope.
    public static let yaw = UnavailableOutputs(rawValue: 1)
    /// The rotation rate: needs a gyroscope.
    public static let rotationRate = UnavailableOutputs(rawValue: 2)
    /// The calibrated magnetic field: needs a magnetometer.
    public static let magneticField = UnavailableOutputs(rawValue: 4)
    /// The compass heading in a north frame: needs a magnetometer.
    public static let heading = UnavailableOutputs(rawValue: 8)

    /// Each member with its wire name (the `MOTION` field it concerns) and reason, in wire order.
    public static let explained: [(member: UnavailableOutputs, name: String, reason: String)] = [
        (.yaw, "yaw", "yaw needs a magnetometer or a gyroscope"),
        (.rotationRate, "rotation_rate", "the rotation rate needs a gyroscope"),
        (.magneticField, "magnetic_field", "the magnetic field needs a magnetometer"),
        (.heading, "heading", "a heading needs a magnetometer"),
    ]

    /// What a machine with an accelerometer and these other sensors cannot give, in a north frame
    /// (the heading included).
    public static func missing(gyroscope: Bool, magnetometer: Bool) -> UnavailableOutputs {
        var missing: UnavailableOutputs = []
        if !gyroscope { missing.insert(.rotationRate) }
        if !magnetometer {
            missing.formUnion([.magneticField, .heading])
            if !gyroscope { missing.insert(.yaw) }
        }
        return missing
    }

    /// Encoded as an object: wire name → reason.
    public func encode(to encoder: any Encoder) throws {
        var reasons: [String: String] = [:]
        for entry in Self.explained where contains(entry.member) { reasons[entry.name] = entry.reason }
        var container = encoder.singleValueContainer()
        try container.encode(reasons)
    }

    /// Decoded from an object; names it does not know are ignored (fields are only ever added).
    public init(from decoder: any Decoder) throws {
        let reasons = try decoder.singleValueContainer().decode([String: String].self)
        self = []
        for entry in Self.explained where reasons[entry.name] != nil { insert(entry.member) }
    }

    /// The reason for each member, in wire order.
    public var reasons: [String] { Self.explained.filter { contains($0.member) }.map(\.reason) }
}
