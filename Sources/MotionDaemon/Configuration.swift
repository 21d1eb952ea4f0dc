import Foundation
import Logging
import MotionDevices
import Yams

/// motiond's settings: `/etc/motiond/motiond.conf` (YAML, see docs/), overridden by command-line flags.
public struct Configuration: Sendable, Equatable, Decodable {
    /// The socket path.
    public var socket: String?
    /// The socket file's permissions, octal text such as `"0660"`.
    public var socketMode: String?
    /// The socket file's group.
    public var socketGroup: String?
    /// Where the calibration is kept.
    public var stateDirectory: String?
    /// Seconds between saves of the calibration.
    public var stateSaveInterval: Double?
    /// Least severe log level.
    public var logLevel: String?
    /// Magnetic declination, degrees east of true north, for `xTrueNorthZVertical`.
    public var declination: Double?
    /// Mount matrices for boards with none or a wrong one (see docs/frames.md); read at start.
    public var mountMatrices: [MountMatrixSetting]?
    /// Whether to serve iio-sensor-proxy's D-Bus interface on the system bus (docs/dbus.md).
    public var dbus: Bool?

    /// One entry of `mount_matrices`: exactly one of `name`, `label`, `syspath`, and the `matrix`
    /// (`"x1, y1, z1; x2, y2, z2; x3, y3, z3"`, in Linux userspace's frame as the hwdb's).
    public struct MountMatrixSetting: Sendable, Equatable, Decodable {
        public var name: String?
        public var label: String?
        public var syspath: String?
        public var matrix: String

        /// The override it stands for, or why it is wrong.
        func override() throws(Invalid) -> MountMatrixOverride {
            let matches: [MountMatrixOverride.Match] = [name.map { .name($0) }, label.map { .label($0) }, syspath.map { .syspath($0) }]
                .compactMap { $0 }
            guard matches.count == 1 else {
                throw Invalid(path: "", problem: "a mount_matrices entry names exactly one of name, label, syspath (it has \(matches.count))")
            }
            guard let override = MountMatrixOverride(match: matches[0], matrix: matrix) else {
                throw Invalid(path: "", problem: "mount_matrices \(matches[0]): \"\(matrix)\" is not a rotation written \"x1, y1, z1; x2, y2, z2; x3, y3, z3\"")
            }
            return override
        }
    }

    /// The mount-matrix overrides, checked.
    public func mountMatrixOverrides() throws(Invalid) -> [MountMatrixOverride] {
        var overrides: [MountMatrixOverride] = []
        for setting in mountMatrices ?? [] { overrides.append(try setting.override()) }
        return overrides
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case socket, declination, dbus
        case mountMatrices = "mount_matrices"
        case socketMode = "socket_mode"
        case socketGroup = "socket_group"
        case stateDirectory = "state_directory"
        case stateSaveInterval = "state_save_interval"
        case logLevel = "log_level"
    }

    /// No settings: every default.
    public init() {}

    /// What is wrong with a configuration file.
    public struct Invalid: Error, CustomStringConvertible {
        public var path: String
        public var problem: String
        public var description: String { "\(path): \(problem)" }
    }

    /// The largest configuration file read, bytes.
    static let maximumFileSize = 64 * 1024
    /// The most values (YAML nodes, aliases expanded) a configuration may hold.
    static let maximumNodes = 10_000

    /// Counts `node` and what it holds against `budget`; `false` once the budget is spent.
    private static func fitsBudget(_ node: Node, _ budget: inout Int) -> Bool {
        budget -= 1
        guard budget >= 0 else { return false }
        switch node {
        case .scalar, .alias: return true
        case .mapping(let mapping):
            for (key, value) in mapping where !fitsBudget(key, &budget) || !fitsBudget(value, &budget) { return false }
            return true
        case .sequence(let sequence):
            for element in sequence where !fitsBudget(element, &budget) { return false }
            return true
        }
    }

    /// Reads and checks a file. A missing file is an error only if `required`.
    public static func load(path: String, required: Bool) throws(Invalid) -> Configuration {
        guard let data = FileManager.default.contents(atPath: path) else {
            if !required && !FileManager.default.fileExists(atPath: path) { return Configuration() }
            throw Invalid(path: path, problem: "cannot be read")
        }
        guard data.count <= maximumFileSize else {
            throw Invalid(path: path, problem: "is \(data.count) bytes; a configuration is at most \(maximumFileSize)")
        }
        let configuration: Configuration
        do {
            let text = String(decoding: data, as: UTF8.self)
            // Aliases repeat what they point to: a few hundred bytes of nested aliases expand to
            // gigabytes (it took the daemon to 9.2 GB). The composed tree shares the repeats, so its
            // nodes can be counted, up to a budget, before anything expands them.
            if let root = try Yams.compose(yaml: text) {
                var budget = maximumNodes
                guard fitsBudget(root, &budget) else {
                    throw Invalid(path: path, problem: "holds more than \(maximumNodes) values once its aliases are expanded")
                }
            }
            // An empty file (or one with only comments) is all defaults.
            guard let document = try Yams.load(yaml: text) else { return Configuration() }
            // A misspelt key would otherwise be a setting silently not applied.
            if let mapping = document as? [String: Any] {
                let known = Set(CodingKeys.allCases.map(\.rawValue))
                if let unknown = mapping.keys.sorted().first(where: { !known.contains($0) }) {
                    throw Invalid(path: path, problem: "unknown key \"\(unknown)\" (known: \(known.sorted().joined(separator: ", ")))")
                }
            }
            configuration = try YAMLDecoder().decode(Configuration.self, from: text)
        } catch let error as Invalid {
            throw error
        } catch let error as DecodingError {
            throw Invalid(path: path, problem: describe(error))
        } catch {
            throw Invalid(path: path, problem: "\(error)")
        }
        try configuration.validate(path: path)
        return configuration
    }

    /// Checks every value, naming `path` (the file, or "command line") in the error.
    public func validate(path: String) throws(Invalid) {
        if let mode = socketMode, UInt32(mode, radix: 8).map({ $0 > 0o777 }) ?? true {
            throw Invalid(path: path, problem: "socket_mode \"\(mode)\" is not an octal mode such as 0660")
        }
        if let interval = stateSaveInterval, !(interval > 0) {
            throw Invalid(path: path, problem: "state_save_interval must be positive, not \(interval)")
        }
        if let level = logLevel, Logger.Level(rawValue: level) == nil {
            throw Invalid(path: path, problem: "log_level \"\(level)\" is not one of trace, debug, info, notice, warning, error, critical")
        }
        if let declination, !(-180...180).contains(declination) {
            throw Invalid(path: path, problem: "declination \(declination) is outside −180…180 degrees")
        }
        do {
            _ = try mountMatrixOverrides()
        } catch {
            throw Invalid(path: path, problem: error.problem)
        }
    }

    /// `other`'s settings where it has them, else these.
    public func overridden(by other: Configuration) -> Configuration {
        var merged = self
        merged.socket = other.socket ?? socket
        merged.socketMode = other.socketMode ?? socketMode
        merged.socketGroup = other.socketGroup ?? socketGroup
        merged.stateDirectory = other.stateDirectory ?? stateDirectory
        merged.stateSaveInterval = other.stateSaveInterval ?? stateSaveInterval
        merged.logLevel = other.logLevel ?? logLevel
        merged.declination = other.declination ?? declination
        merged.mountMatrices = other.mountMatrices ?? mountMatrices
        merged.dbus = other.dbus ?? dbus
        return merged
    }

    /// The settings that take effect only at start.
    public func restartOnlyDifferences(from other: Configuration) -> [String] {
        var names: [String] = []
        if socket != other.socket { names.append("socket") }
        if socketMode != other.socketMode { names.append("socket_mode") }
        if socketGroup != other.socketGroup { names.append("socket_group") }
        if stateDirectory != other.stateDirectory { names.append("state_directory") }
        if stateSaveInterval != other.stateSaveInterval { names.append("state_save_interval") }
        if mountMatrices != other.mountMatrices { names.append("mount_matrices") }
        if dbus != other.dbus { names.append("dbus") }
        return names
    }

    private static func describe(_ error: DecodingError) -> String {
        switch error {
        case .typeMismatch(let type, let context):
            "\(path(context)): expected \(type)"
        case .dataCorrupted(let context):
            context.codingPath.isEmpty ? context.debugDescription : "\(path(context)): \(context.debugDescription)"
        case .keyNotFound(let key, _):
            "missing \(key.stringValue)"
        case .valueNotFound(let type, let context):
            "\(path(context)): expected \(type)"
        @unknown default:
            "\(error)"
        }
    }

    private static func path(_ context: DecodingError.Context) -> String {
        context.codingPath.map(\.stringValue).joined(separator: ".")
    }
}
