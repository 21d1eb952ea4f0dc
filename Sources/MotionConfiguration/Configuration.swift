import FoundationEssentials
import Logging
import MotionDevices
import MotionSystem

/// motiond's settings: `/etc/motiond/motiond.conf` (YAML, see docs/), overridden by command-line flags.
public struct Configuration: Sendable, Equatable {
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
    /// The MQTT bridge: publishes streams to a broker (docs/fleet.md); `nil`: none.
    public var mqtt: MQTTSettings?
    /// Other machines' sensors, served by their iiod: libiio URIs `ip:host[:port]` (docs/fleet.md).
    public var networkSensors: [String]?
    /// Where to serve Prometheus metrics over HTTP, `host:port` (docs/fleet.md); `nil`: nowhere.
    public var metrics: String?

    /// One entry of `mount_matrices`: exactly one of `name`, `label`, `syspath`, and the `matrix`
    /// (`"x1, y1, z1; x2, y2, z2; x3, y3, z3"`, in Linux userspace's frame as the hwdb's).
    public struct MountMatrixSetting: Sendable, Equatable {
        public var name: String?
        public var label: String?
        public var syspath: String?
        public var matrix: String

        /// The override it stands for, or why it is wrong.
        /// An entry naming its device by one of `name`, `label`, `syspath`.
        public init(name: String? = nil, label: String? = nil, syspath: String? = nil, matrix: String) {
            (self.name, self.label, self.syspath, self.matrix) = (name, label, syspath, matrix)
        }

        /// An entry of `mount_matrices`, at `place` (for the error).
        init(_ entry: YAMLNode, at place: String) throws(Invalid) {
            guard case .mapping(let fields) = entry else { throw Invalid(path: "", problem: "\(place): expected name (or label, or syspath) and matrix") }
            var matrix: String?
            for (key, value) in fields where !value.isNull {
                switch key {
                case "name": name = try value.text("\(place).name")
                case "label": label = try value.text("\(place).label")
                case "syspath": syspath = try value.text("\(place).syspath")
                case "matrix": matrix = try value.text("\(place).matrix")
                default: throw Invalid(path: "", problem: "\(place): unknown key \"\(key)\" (known: label, matrix, name, syspath)")
                }
            }
            guard let matrix else { throw Invalid(path: "", problem: "\(place): missing matrix") }
            self.matrix = matrix
        }

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
        case socket, declination, dbus, mqtt, metrics
        case networkSensors = "network_sensors"
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

        /// `problem` of the setting or file at `path`.
        public init(path: String, problem: String) {
            (self.path, self.problem) = (path, problem)
        }
    }

    /// The largest configuration file read, bytes.
    static let maximumFileSize = 64 * 1024
    /// The most values (YAML nodes, aliases expanded) a configuration may hold.
    static let maximumNodes = 10_000

    /// Reads the file at `path` (YAML; see motiond.conf(5)); a missing file is all defaults unless `required`.
    public static func load(path: String, required: Bool) throws(Invalid) -> Configuration {
        let read: [UInt8]?
        do {
            read = try LocalFiles().contents(of: path, atMost: maximumFileSize)
        } catch {
            throw Invalid(path: path, problem: "cannot be read: \(error)")
        }
        guard let data = read else {
            if !required { return Configuration() }
            throw Invalid(path: path, problem: "cannot be read: no such file")
        }
        guard data.count <= maximumFileSize else {
            throw Invalid(path: path, problem: "is larger than \(maximumFileSize) bytes, the most a configuration may be")
        }
        let configuration: Configuration
        do throws(Invalid) {
            let root: YAMLNode?
            do {
                root = try YAMLNode.parse(String(decoding: data, as: UTF8.self), maximumNodes: maximumNodes)
            } catch {
                throw Invalid(path: path, problem: error.description)
            }
            // An empty file (or one with only comments) is all defaults.
            guard let root, !root.isNull else { return Configuration() }
            configuration = try Configuration(root)
        } catch {
            throw Invalid(path: path, problem: error.problem)
        }
        try configuration.validate(path: path)
        return configuration
    }

    /// The settings of a configuration document: a mapping of the keys of `CodingKeys`.
    init(_ document: YAMLNode) throws(Invalid) {
        guard case .mapping(let settings) = document else { throw Invalid(path: "", problem: "expected a mapping of settings (key: value lines)") }
        let known = Set(CodingKeys.allCases.map(\.rawValue))
        for (key, value) in settings where !value.isNull {
            guard let setting = CodingKeys(rawValue: key) else {
                // A misspelt key would otherwise be a setting silently not applied.
                throw Invalid(path: "", problem: "unknown key \"\(key)\" (known: \(known.sorted().joined(separator: ", ")))")
            }
            switch setting {
            case .socket: socket = try value.text(key)
            case .socketMode: socketMode = try value.text(key)
            case .socketGroup: socketGroup = try value.text(key)
            case .stateDirectory: stateDirectory = try value.text(key)
            case .stateSaveInterval: stateSaveInterval = try value.number(key)
            case .logLevel: logLevel = try value.text(key)
            case .declination: declination = try value.number(key)
            case .dbus: dbus = try value.boolean(key)
            case .mqtt: mqtt = try MQTTSettings(value)
            case .metrics: metrics = try value.text(key)
            case .networkSensors:
                guard case .sequence(let entries) = value else { throw Invalid(path: "", problem: "\(key): expected a list of URIs (ip:host)") }
                networkSensors = try entries.enumerated().map { (index, entry) throws(Invalid) in try entry.text("\(key)[\(index)]") }
            case .mountMatrices:
                guard case .sequence(let entries) = value else { throw Invalid(path: "", problem: "\(key): expected a list of entries") }
                mountMatrices = try entries.enumerated().map { (index, entry) throws(Invalid) in try MountMatrixSetting(entry, at: "\(key)[\(index)]") }
            }
        }
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
        do throws(Invalid) {
            _ = try mountMatrixOverrides()
            try mqtt?.validate()
            if let metrics { _ = try Self.hostAndPort(metrics) }
            for uri in networkSensors ?? [] where !uri.hasPrefix("ip:") || uri.count <= 3 {
                throw Invalid(path: "", problem: "network_sensors: \"\(uri)\" is not a libiio network URI (ip:host or ip:host:port)")
            }
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
        merged.mqtt = other.mqtt ?? mqtt
        merged.metrics = other.metrics ?? metrics
        merged.networkSensors = other.networkSensors ?? networkSensors
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
        if mqtt != other.mqtt { names.append("mqtt") }
        if metrics != other.metrics { names.append("metrics") }
        if networkSensors != other.networkSensors { names.append("network_sensors") }
        return names
    }
}

extension YAMLNode {
    /// A setting's text (any scalar: `socket: 123` is the path "123").
    func text(_ key: String) throws(Configuration.Invalid) -> String {
        guard case .scalar(let text, _) = self else { throw Configuration.Invalid(path: "", problem: "\(key): expected a string") }
        return text
    }

    /// A setting's number (a plain scalar).
    func number(_ key: String) throws(Configuration.Invalid) -> Double {
        guard case .scalar(let text, true) = self, let number = Double(text), number.isFinite else {
            throw Configuration.Invalid(path: "", problem: "\(key): expected a number")
        }
        return number
    }

    /// A setting's whole number (a plain scalar).
    func integer(_ key: String) throws(Configuration.Invalid) -> Int {
        guard case .scalar(let text, true) = self, let number = Int(text) else {
            throw Configuration.Invalid(path: "", problem: "\(key): expected a whole number")
        }
        return number
    }

    /// A setting's truth, in YAML 1.1's words: true/false, yes/no, on/off.
    func boolean(_ key: String) throws(Configuration.Invalid) -> Bool {
        if case .scalar(let text, true) = self {
            switch text.lowercased() {
            case "true", "yes", "on": return true
            case "false", "no", "off": return false
            default: break
            }
        }
        throw Configuration.Invalid(path: "", problem: "\(key): expected true or false")
    }
}

extension Configuration {
    /// The `host:port` of `metrics`, or what is wrong with it.
    public static func hostAndPort(_ text: String) throws(Invalid) -> (host: String, port: Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            throw Invalid(path: "", problem: "metrics \"\(text)\" is not host:port (such as 127.0.0.1:9464)")
        }
        var host = text[..<colon]
        if host.hasPrefix("[") && host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        guard !host.isEmpty else { throw Invalid(path: "", problem: "metrics \"\(text)\" names no host (such as 127.0.0.1:9464)") }
        return (String(host), port)
    }
}
