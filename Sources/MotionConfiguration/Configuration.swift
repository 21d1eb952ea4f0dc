import FoundationEssentials
import Logging
import MotionCore
import MotionDevices
import MotionSystem

/// motiond's settings: `/etc/motiond/motiond.conf` (YAML), overridden by command-line flags. Each is
/// declared once, in `settings`; motiond.conf(5)'s list of keys is written from there.
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
    /// Seconds between reads of a resting accelerometer that its motion events wake (docs/protocol.md, STATUS `rest`).
    public var motionEventHeartbeat: Double?
    /// Whether a sensor no re-arm woke has its driver unbound and bound again (root only).
    public var rebindStalledSensors: Bool?
    /// Whether a chip's own functions (step counter, activity, significant motion, on-body) are
    /// read where a stream prefers them (docs/protocol.md 1.11).
    public var chipFunctions: Bool?
    /// Least severe log level.
    public var logLevel: String?
    /// Magnetic declination, degrees east of true north, for `xTrueNorthZVertical`.
    public var declination: Double?
    /// Where the machine is, `latitude, longitude[, altitude]` (degrees, m), for the World Magnetic
    /// Model's declination.
    public var location: String?
    /// The pressure at sea level for the altitude, kPa (docs/protocol.md, `ALTITUDE`).
    public var seaLevelPressure: Double?
    /// The height of the person carrying the device, m: a walking step is 0.415 × it (docs/activity.md).
    public var height: Double?
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
    /// The DSU (cemuhook) server for emulators (docs/games.md); `nil`: none.
    public var dsu: DSUSettings?
    /// `auto`: a tablet-mode switch from the hinge where the kernel reports none; `off`: never.
    public var tabletMode: String?

    /// No settings: every default.
    public init() {}

    /// What is wrong with a configuration, and where.
    public struct Invalid: Error, CustomStringConvertible {
        public var place: Place
        public var problem: String
        public var description: String { place.description.isEmpty ? problem : "\(place): \(problem)" }

        /// `problem` of the value at `place`.
        public init(place: Place, problem: String) {
            (self.place, self.problem) = (place, problem)
        }
    }

    /// The largest configuration file read, bytes.
    public static let maximumFileSize = 64 * 1024
    /// The most values (YAML nodes, aliases expanded) a configuration may hold.
    static let maximumNodes = 10_000

    /// Reads and checks the file at `path` (YAML; see motiond.conf(5)); a missing file is all
    /// defaults unless `required`.
    public static func load(path: String, required: Bool) throws(Invalid) -> Configuration {
        let file = Place(file: path)
        let data: [UInt8]
        // The state files' rules: a regular file only (a FIFO would block the start, a device be
        // opened), opened without blocking, of a bounded size.
        switch Result(catching: { () throws(Errno) in try LocalFiles().regularFileContents(of: path, atMost: maximumFileSize) }) {
        case .failure(let error): throw file.invalid("cannot be read: \(error)")
        case .success(.contents(let bytes)) where bytes.count <= maximumFileSize: data = bytes
        // `--config /dev/null`: the usual way to say "no configuration", read as an empty file.
        case .success(.notRegular) where path == "/dev/null": data = []
        case .success(.missing):
            if !required { return Configuration() }
            throw file.invalid("cannot be read: no such file")
        case .success(.notRegular(let kind)): throw file.invalid("is \(kind), not a regular file")
        case .success(.contents), .success(.tooLarge):
            throw file.invalid("is larger than \(maximumFileSize) bytes, the most a configuration may be")
        }
        return try parse(String(decoding: data, as: UTF8.self), file: path)
    }

    /// Reads and checks `text` as `load` reads the file at `path`'s content: what motiond would make
    /// of it (`motionctl calibrate mount` checks its edits of motiond.conf with it).
    public static func parse(_ text: String, file path: String) throws(Invalid) -> Configuration {
        let file = Place(file: path)
        guard text.utf8.count <= maximumFileSize else {
            throw file.invalid("is larger than \(maximumFileSize) bytes, the most a configuration may be")
        }
        let root: YAMLNode?
        do {
            root = try YAMLNode.parse(text, maximumNodes: maximumNodes)
        } catch {
            throw file.invalid(error.description)
        }
        // An empty file (or one with only comments) is all defaults.
        guard let root, !root.isNull else { return Configuration() }
        return try read(root, at: file)
    }

    /// The settings given on the command line, by key (`socket_mode`), as text; each is read as the
    /// file's value would be and checked, an error naming the flag.
    public static func flags(_ given: [String: String?]) throws(Invalid) -> Configuration {
        if let stray = given.keys.sorted().first(where: { key in !settings.contains { $0.key == key && $0.isFlag } }) {
            throw Place(file: "command line", key: stray).invalid("is not a setting motiond takes as a flag")
        }
        var flags = Configuration()
        // In the table's order, so that of two bad flags the same one is named every time.
        for setting in settings {
            guard let text = given[setting.key] ?? nil else { continue }
            let place = Place(file: "command line", key: setting.flagName)
            try setting.read(&flags, .scalar(text, plain: true), place)
            try setting.check(flags, place)
        }
        return flags
    }

    /// A flag's help: its setting's summary and default.
    public static func help(_ key: String) -> String {
        guard let setting = settings.first(where: { $0.key == key }) else { return "" }
        return setting.summary + (setting.defaultValue.map { " (default: \($0))" } ?? "")
    }

    /// The keys of the settings motiond also takes as flags.
    public static var flagKeys: [String] { settings.filter(\.isFlag).map(\.key) }

    /// `other`'s settings where it has them, else these.
    public func overridden(by other: Configuration) -> Configuration {
        var merged = self
        for setting in Self.settings { setting.take(&merged, other) }
        return merged
    }

    /// The keys of the settings that differ from `other`'s and take effect only at start.
    public func restartOnlyDifferences(from other: Configuration) -> [String] {
        Self.settings.filter { $0.reload == .restart && $0.differs(self, other) }.map(\.key)
    }

    /// The mount-matrix overrides, or what is wrong with one (a configuration read from a file was
    /// checked when read).
    public func mountMatrixOverrides() throws(Invalid) -> [MountMatrixOverride] {
        try (mountMatrices ?? []).enumerated().map { index, setting throws(Invalid) in
            try setting.override(at: Place(key: "mount_matrices").entry(index))
        }
    }
}

extension Configuration: SettingsSection {
    static let settings: [Setting<Configuration>] = [
        .optional(
            "socket", \.socket, .text("path"), default: "/run/motiond/motiond.sock as root, else $XDG_RUNTIME_DIR/motiond.sock", flag: true,
            summary: "The socket to listen on, when systemd does not pass one."),
        .optional(
            "socket_mode", \.socketMode, .text("octal string, such as \"0660\""), default: "0660", flag: true,
            summary: "The socket file's permissions.",
            check: { UInt32($0, radix: 8).map { $0 <= 0o777 } == true ? nil : "\"\($0)\" is not an octal mode such as 0660" }),
        .optional(
            "socket_group", \.socketGroup, .text("group name"), default: "the daemon's own", flag: true,
            summary: "The socket file's group: its members may connect."),
        .optional(
            "state_directory", \.stateDirectory, .text("path"),
            default: "$STATE_DIRECTORY (systemd's StateDirectory, /var/lib/motiond), else /var/lib/motiond as root, else $XDG_STATE_HOME/motiond",
            flag: true, summary: "Where the calibration is kept across restarts."),
        .optional(
            "state_save_interval", \.stateSaveInterval, .number("seconds, 0.01 to 86400"), default: "60", flag: true,
            summary: "How often the calibration and the step history are saved while sensors run.",
            // At least 10 ms: below it the timer alone keeps the loop busy (1e-9 s spun it at 100 %). At
            // most a day: what a crash may lose, and far inside what the loop's timer holds (ns in Int64).
            check: { (0.01...86_400).contains($0) ? nil : "must be 0.01...86400 seconds, not \($0)" }),
        .optional(
            "motion_event_heartbeat", \.motionEventHeartbeat, .number("seconds, 1 to 3600"), default: "30", flag: true,
            summary: "How often an accelerometer that its own motion events wake is read while it lies still: a device whose events never come although it moved is polled instead from the first such read.",
            check: { (1...3600).contains($0) ? nil : "must be 1...3600 seconds, not \($0)" }),
        .optional(
            "rebind_stalled_sensors", \.rebindStalledSensors, .boolean, default: "false", flag: true,
            summary: "The last resort for a sensor that stays silent or keeps failing though its device is there, after three re-arms (at 0, 1 and 2 s) did not wake it: unbind its chip from its driver and bind it again through sysfs, which re-probes the chip. Needs root (the shipped unit runs as the motiond user: a drop-in with User=root); the device comes back as a new one, and its watchers get ENDED."),
        .optional(
            "chip_functions", \.chipFunctions, .boolean, default: "true", flag: true,
            summary: "Read a chip's own functions where it has them: its step counter and activity classes for pedometer and activity (the accelerometer then sleeps), its significant motion and on-body detection; false: the accelerometer's step detector and gestures, as on a machine without them."),
        .optional(
            "tablet_mode", \.tabletMode, .text("auto or off"), default: "auto", flag: true,
            summary: "A SW_TABLET_MODE switch (uinput) from a convertible's hinge, so that the desktop turns the keyboard off when it is folded past 210°: auto where the machine has two accelerometers and the kernel reports no tablet mode itself; off never.",
            check: { ["auto", "off"].contains($0) ? nil : "\"\($0)\" is not auto or off" }),
        .optional(
            "log_level", \.logLevel, .text("trace, debug, info, notice, warning, error, critical"), default: "info", reload: .live, flag: true,
            summary: "The least severe level logged.",
            check: { Logger.Level(rawValue: $0) == nil ? "\"\($0)\" is not one of trace, debug, info, notice, warning, error, critical" : nil }),
        .optional(
            "declination", \.declination, .number("degrees, -180 to 180"), default: "the World Magnetic Model's at location, else 0", reload: .live, flag: true,
            summary: "Magnetic declination east of true north, for the xTrueNorthZVertical frame.",
            check: { (-180...180).contains($0) ? nil : "\($0) is outside -180...180 degrees" }),
        .optional(
            "location", \.location, .text("\"latitude, longitude\" or \"latitude, longitude, altitude\": degrees north, degrees east, m"),
            default: "none; with dbus, GeoClue's place, asked while a client watches that frame", reload: .live, flag: true,
            summary: "Where the machine is: the xTrueNorthZVertical frame then turns by the World Magnetic Model's declination there (WMM2025, for the date), unless declination is set.",
            check: { GeographicLocation(parsing: $0) == nil ? "\"\($0)\" is not \"latitude, longitude[, altitude]\" with latitude -90...90, longitude -180...180 degrees, altitude -1000...100000 m" : nil }),
        .optional(
            "sea_level_pressure", \.seaLevelPressure, .number("kPa, 30 to 120"), default: manual(LiveSettings.defaults.seaLevelPressure), reload: .live, flag: true,
            summary: "The sea-level pressure the altitude stream is computed for: the standard atmosphere's, or the local QNH (in kPa: 1013.2 hPa is 101.32).",
            check: { (30...120).contains($0) ? nil : "\($0) kPa is outside 30...120 kPa (in kPa, not hPa: 1013.25 hPa is 101.325 kPa)" }),
        .optional(
            "height", \.height, .number("m, 0.5 to 2.5"), default: manual(LiveSettings.defaults.height), reload: .live, flag: true,
            summary: "The height of the person carrying the device, for the distance walked: a step is \(LiveSettings.stepLengthPerHeight) × the height.",
            check: { (0.5...2.5).contains($0) ? nil : "\($0) m is outside 0.5...2.5 m (in metres: 175 cm is 1.75)" }),
        .optional(
            "mount_matrices", \.mountMatrices, .list(of: .section("mapping"), "list of mappings"), default: "none",
            summary: "Mount matrices for boards with none or a wrong one (frames.md): each entry names its device by exactly one of name, label, syspath."),
        .optional(
            "dbus", \.dbus, .boolean, default: "false", flag: true,
            summary: "Serve iio-sensor-proxy's D-Bus interface (net.hadess.SensorProxy) on the system bus as well; the D-Bus drop-in of motiond.service passes --dbus."),
        .optional(
            "mqtt", \.mqtt, .section(), default: "none",
            summary: "Publish streams to an MQTT broker: each message one JSON object of the socket protocol on <topic_prefix><stream>, and a retained <topic_prefix>status of online, with offline as the last will (fleet.md)."),
        .optional(
            "metrics", \.metrics, .text("host:port"), default: "none", flag: true, summary: "Serve Prometheus metrics over HTTP at http://host:port/metrics.",
            check: { hostAndPort($0) == nil ? "\"\($0)\" is not host:port (such as 127.0.0.1:9464)" : nil }),
        .optional(
            "dsu", \.dsu, .section("host:port, or mapping", orFirst: true), default: "none", flag: true,
            summary: "Serve the IMU to emulators over the DSU (cemuhook) protocol, UDP (games.md): host:port alone, or a mapping."),
        .optional(
            "network_sensors", \.networkSensors, .list(of: .text("URI"), "list of libiio URIs"), default: "none",
            summary: "Fuse the IIO devices that iiod serves on other machines: ip:host or ip:host:port. Their devices are numbered from iio:device10000 (1000 per URI), read polled, and listed again every 10 s.",
            check: { uris in uris.first { !$0.hasPrefix("ip:") || $0.count <= 3 }.map { "\"\($0)\" is not a libiio network URI (ip:host or ip:host:port)" } }),
    ]

    /// The settings that change while running, this configuration's where it has them, else the defaults.
    public var live: LiveSettings {
        let defaults = LiveSettings.defaults
        return LiveSettings(
            declination: declination ?? defaults.declination, location: location.flatMap(GeographicLocation.init(parsing:)) ?? defaults.location,
            seaLevelPressure: seaLevelPressure ?? defaults.seaLevelPressure,
            height: height ?? defaults.height)
    }

    /// A default as the manual writes it: `0`, `101.325`, `1.7`.
    private static func manual(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : "\(value)"
    }

    /// The `host:port` of `metrics` (a bracketed IPv6 host unbracketed), or `nil` when it is not one.
    public static func hostAndPort(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else { return nil }
        var host = text[..<colon]
        if host.hasPrefix("[") && host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        return host.isEmpty ? nil : (String(host), port)
    }
}

/// One entry of `mount_matrices`: exactly one of `name`, `label`, `syspath`, and the `matrix`
/// (`"x1, y1, z1; x2, y2, z2; x3, y3, z3"`, in Linux userspace's frame as the hwdb's).
public struct MountMatrixSetting: Sendable, Equatable, SettingsSection {
    public var name: String?
    public var label: String?
    public var syspath: String?
    public var matrix = ""

    /// An entry naming its device by one of `name`, `label`, `syspath`.
    public init(name: String? = nil, label: String? = nil, syspath: String? = nil, matrix: String) {
        (self.name, self.label, self.syspath, self.matrix) = (name, label, syspath, matrix)
    }

    init() {}

    /// The entry as one line of motiond.conf that sets it: the remedy the daemon logs for a sensor
    /// whose axes disagree with its accelerometer's (by `name`, the one field such an entry needs).
    public static func line(name: String, matrix: String) -> String {
        "mount_matrices: [{name: \(name), matrix: \"\(matrix)\"}]"
    }

    static let settings: [Setting<MountMatrixSetting>] = [
        .optional("name", \.name, .text("IIO name"), default: nil, summary: "The device's IIO name, such as bmi160."),
        .optional("label", \.label, .text("IIO label"), default: nil, summary: "The device's IIO label."),
        .optional("syspath", \.syspath, .text("path"), default: nil, summary: "The device's sysfs path."),
        .value(
            "matrix", \.matrix, .text("\"x1, y1, z1; x2, y2, z2; x3, y3, z3\""), default: nil, required: true,
            summary: "The rotation, in Linux userspace's frame as systemd's hwdb writes it."),
    ]

    func checkTogether(at place: Place) throws(Configuration.Invalid) {
        _ = try override(at: place)
    }

    /// The override it stands for; what is wrong with it is an error at `place`.
    func override(at place: Place) throws(Configuration.Invalid) -> MountMatrixOverride {
        let matches: [MountMatrixOverride.Match] = [name.map { .name($0) }, label.map { .label($0) }, syspath.map { .syspath($0) }].compactMap { $0 }
        guard matches.count == 1 else { throw place.invalid("names exactly one of name, label, syspath (it has \(matches.count))") }
        guard let override = MountMatrixOverride(match: matches[0], matrix: matrix) else {
            throw place.invalid("\"\(matrix)\" is not a rotation written \"x1, y1, z1; x2, y2, z2; x3, y3, z3\"")
        }
        return override
    }
}
