import MotionCore

/// A mount matrix given in motiond.conf for a board nobody wrote one for (or wrote a wrong one):
/// it wins over udev's `ACCEL_MOUNT_MATRIX` and the sysfs attributes, for every sensor of the
/// devices it matches. The matrix is in Linux userspace's frame, like the hwdb's (see `DeviceFrame`).
public struct MountMatrixOverride: Sendable, Hashable {
    /// Which devices it is for.
    public enum Match: Sendable, Hashable, CustomStringConvertible {
        /// The driver's `name` attribute (`bmi160`).
        case name(String)
        /// The `label` attribute (`accel-display`).
        case label(String)
        /// The sysfs path as udev reports it (`/sys/devices/…/iio:device0`).
        case syspath(String)

        public var description: String {
            switch self {
            case .name(let name): "name=\(name)"
            case .label(let label): "label=\(label)"
            case .syspath(let path): "syspath=\(path)"
            }
        }
    }

    /// What a device is known by, to match against.
    struct Identity {
        var name: String
        var label: String?
        var syspath: String
    }

    /// Which devices it is for.
    public var match: Match
    /// The mount matrix, rows as in IIO's `mount_matrix` (dimensionless).
    public var matrix: Matrix3

    /// An override of the mount matrix of the devices `match` names.
    public init(match: Match, matrix: Matrix3) {
        self.match = match
        self.matrix = matrix
    }

    /// An override from the matrix's text, `x1, y1, z1; x2, y2, z2; x3, y3, z3` as in the hwdb; `nil`
    /// if the text is not nine numbers in three rows or the matrix is no rotation (`DeviceFrame`).
    public init?(match: Match, matrix text: String) {
        guard let matrix = AttributeParser.mountMatrix(text), (try? DeviceFrame.transform(mountMatrix: matrix)) != nil else {
            return nil
        }
        self.init(match: match, matrix: matrix)
    }

    func matches(_ identity: Identity) -> Bool {
        switch match {
        case .name(let name): identity.name == name
        case .label(let label): identity.label == label
        case .syspath(let path): identity.syspath == path
        }
    }
}
