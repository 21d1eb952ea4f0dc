/// A three-component vector of `Double`, used for every 3-axis quantity in the process
/// (m/s², rad/s, µT) in the device frame: x to the right, y to the top, z out of the screen.
public struct Vector3: Sendable, Hashable, Codable {
    /// Component along the device's x axis (to the right), in the unit of the quantity.
    public var x: Double
    /// Component along the device's y axis (to the top), in the unit of the quantity.
    public var y: Double
    /// Component along the device's z axis (out of the screen), in the unit of the quantity.
    public var z: Double

    /// Creates a vector from its three components, in the unit of the quantity it holds.
    @inlinable
    public init(x: Double, y: Double, z: Double) {
        self.x = x
        self.y = y
        self.z = z
    }

    /// The zero vector.
    public static let zero = Vector3(x: 0, y: 0, z: 0)

    /// Euclidean length, in the unit of the components.
    @inlinable
    public var length: Double { (x * x + y * y + z * z).squareRoot() }

    /// Component by axis index (0 = x, 1 = y, 2 = z).
    @inlinable
    public subscript(axis: Axis) -> Double {
        get {
            switch axis {
            case .x: x
            case .y: y
            case .z: z
            }
        }
        set {
            switch axis {
            case .x: x = newValue
            case .y: y = newValue
            case .z: z = newValue
            }
        }
    }

    /// The squared length, in the unit of the components squared.
    @inlinable
    public var squaredLength: Double { x * x + y * y + z * z }

    /// The dot product with `other`.
    @inlinable
    public func dot(_ other: Vector3) -> Double { x * other.x + y * other.y + z * other.z }

    /// The cross product `self × other` (right-handed).
    @inlinable
    public func cross(_ other: Vector3) -> Vector3 {
        Vector3(x: y * other.z - z * other.y, y: z * other.x - x * other.z, z: x * other.y - y * other.x)
    }

    @inlinable
    public static func + (lhs: Vector3, rhs: Vector3) -> Vector3 {
        Vector3(x: lhs.x + rhs.x, y: lhs.y + rhs.y, z: lhs.z + rhs.z)
    }

    @inlinable
    public static func - (lhs: Vector3, rhs: Vector3) -> Vector3 {
        Vector3(x: lhs.x - rhs.x, y: lhs.y - rhs.y, z: lhs.z - rhs.z)
    }

    @inlinable
    public static func * (lhs: Vector3, rhs: Double) -> Vector3 {
        Vector3(x: lhs.x * rhs, y: lhs.y * rhs, z: lhs.z * rhs)
    }
}

/// One of the three device axes.
public enum Axis: Int, Sendable, Hashable, Codable, CaseIterable {
    /// To the right of the device.
    case x
    /// To the top of the device.
    case y
    /// Out of the screen.
    case z
}
