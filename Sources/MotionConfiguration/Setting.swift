/// Where a value sits in the configuration: the file (or "command line") and the key path to it
/// (`mqtt.streams[0].interval`), so that every error says both.
public struct Place: Sendable, Equatable, CustomStringConvertible {
    /// The file, or "command line"; `nil`: settings made in code.
    public var file: String?
    /// Empty: the document itself.
    public var key: String

    public init(file: String? = nil, key: String = "") {
        (self.file, self.key) = (file, key)
    }

    /// The value under `name` of this mapping.
    func child(_ name: String) -> Place { Place(file: file, key: key.isEmpty ? name : "\(key).\(name)") }
    /// The `index`th entry of this list.
    func entry(_ index: Int) -> Place { Place(file: file, key: "\(key)[\(index)]") }

    /// `problem` of the value here.
    func invalid(_ problem: String) -> Configuration.Invalid { Configuration.Invalid(place: self, problem: problem) }

    public var description: String { [file ?? "", key].filter { !$0.isEmpty }.joined(separator: ": ") }
}

/// How a setting's value is written in YAML (a command-line flag's text is read as a plain scalar),
/// and what the manual calls it.
struct ValueType<Value: Sendable>: Sendable {
    /// The manual's name of the type, such as "seconds, > 0".
    var manualName: String
    /// The manual's entries (roff) for a section's own settings (a section, or a list of them).
    var manualEntries: [String] = []
    var read: @Sendable (YAMLNode, Place) throws(Configuration.Invalid) -> Value
}

extension ValueType where Value == Bool {
    /// A truth, in YAML 1.1's words: true/false, yes/no, on/off.
    static let boolean = plain("true or false", expected: "true or false") { text in
        switch text.lowercased() {
        case "true", "yes", "on": true
        case "false", "no", "off": false
        default: nil
        }
    }
}

extension ValueType {
    /// Any scalar, as text: `socket: 123` is the path "123".
    static func text(_ manualName: String) -> Self where Value == String {
        Self(manualName: manualName) { node, place throws(Configuration.Invalid) in
            guard case .scalar(let text, _) = node else { throw place.invalid("expected a string") }
            return text
        }
    }

    /// A plain scalar that `parse` reads; else the error says the value is not `expected`.
    private static func plain(_ manualName: String, expected: String, _ parse: @escaping @Sendable (String) -> Value?) -> Self {
        Self(manualName: manualName) { node, place throws(Configuration.Invalid) in
            guard case .scalar(let text, true) = node, let value = parse(text) else { throw place.invalid("expected \(expected)") }
            return value
        }
    }

    /// A finite number.
    static func number(_ manualName: String) -> Self where Value == Double {
        plain(manualName, expected: "a number") { Double($0).flatMap { $0.isFinite ? $0 : nil } }
    }

    /// A whole number.
    static func integer(_ manualName: String) -> Self where Value == Int { plain(manualName, expected: "a whole number") { Int($0) } }

    /// One of an enumeration's names.
    static func named(_ type: Value.Type, _ manualName: String) -> Self where Value: RawRepresentable<String> & CaseIterable {
        Self(manualName: manualName) { node, place throws(Configuration.Invalid) in
            guard case .scalar(let name, _) = node else { throw place.invalid("expected a \(manualName)") }
            guard let value = Value(rawValue: name) else {
                throw place.invalid("\"\(name)\" is not one of \(Value.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return value
        }
    }

    /// A list of `element`s.
    static func list<Element>(of element: ValueType<Element>, _ manualName: String) -> Self where Value == [Element] {
        Self(manualName: manualName, manualEntries: element.manualEntries) { node, place throws(Configuration.Invalid) in
            guard case .sequence(let entries) = node else { throw place.invalid("expected a list of \(manualName)") }
            return try entries.enumerated().map { (index, entry) throws(Configuration.Invalid) in try element.read(entry, place.entry(index)) }
        }
    }

    /// A mapping of a section's own settings; `orFirst`: or a scalar alone, the value of its first
    /// setting, the others at their defaults (`dsu: 127.0.0.1:26760`, `- motion`).
    static func section(_ manualName: String = "mapping", orFirst: Bool = false) -> Self where Value: SettingsSection {
        Self(manualName: manualName, manualEntries: Value.settings.flatMap(\.manualEntry)) { node, place throws(Configuration.Invalid) in
            guard orFirst, case .scalar = node else { return try Value.read(node, at: place) }
            var section = Value()
            try Value.settings[0].read(&section, node, place)
            try Value.settings[0].check(section, place)
            return section
        }
    }
}

/// One setting, declared once: its key, its type, its default, what makes a value wrong, whether a
/// reload applies it and whether it is also a command-line flag. Reading, checking, merging with the
/// flags, the reload's list of what needs a restart, the flags' help and motiond.conf(5)'s list all
/// come from these declarations.
struct Setting<Section: Sendable>: Sendable {
    enum Reload: Sendable { case live, restart }

    var key: String
    var type: String
    var summary: String
    /// The default, as the manual says it; `nil`: none.
    var defaultValue: String?
    var reload: Reload
    /// Whether motiond also takes it as `--key-with-dashes`.
    var isFlag: Bool
    var required: Bool
    /// The manual's entries for a section's own settings.
    var manualEntries: [String]
    var read: @Sendable (inout Section, YAMLNode, Place) throws(Configuration.Invalid) -> Void
    var check: @Sendable (Section, Place) throws(Configuration.Invalid) -> Void
    var differs: @Sendable (Section, Section) -> Bool
    var take: @Sendable (inout Section, Section) -> Void

    /// Its command-line flag.
    var flagName: String { "--" + key.replacing("_", with: "-") }

    /// A setting held in an optional field: absent is its default, and a flag given overrides the file.
    static func optional<Value: Equatable & Sendable>(
        _ key: String, _ field: WritableKeyPath<Section, Value?> & Sendable, _ type: ValueType<Value>, default defaultValue: String?,
        reload: Reload = .restart, flag: Bool = false, summary: String, check: @escaping @Sendable (Value) -> String? = { _ in nil }
    ) -> Self {
        let optional = ValueType<Value?>(manualName: type.manualName, manualEntries: type.manualEntries) {
            node, place throws(Configuration.Invalid) in try type.read(node, place)
        }
        var setting = value(key, field, optional, default: defaultValue, summary: summary, check: { $0.flatMap(check) })
        setting.reload = reload
        setting.isFlag = flag
        // A flag not given leaves the file's value.
        setting.take = { section, other in if let value = other[keyPath: field] { section[keyPath: field] = value } }
        return setting
    }

    /// A setting held in a field with its default value; `required`: the section has none without it.
    static func value<Value: Equatable & Sendable>(
        _ key: String, _ field: WritableKeyPath<Section, Value> & Sendable, _ type: ValueType<Value>, default defaultValue: String?,
        required: Bool = false, summary: String, check: @escaping @Sendable (Value) -> String? = { _ in nil }
    ) -> Self {
        Setting(
            key: key, type: type.manualName, summary: summary, defaultValue: defaultValue, reload: .restart, isFlag: false, required: required,
            manualEntries: type.manualEntries,
            read: { section, node, place throws(Configuration.Invalid) in section[keyPath: field] = try type.read(node, place) },
            check: { section, place throws(Configuration.Invalid) in
                if let problem = check(section[keyPath: field]) { throw place.invalid(problem) }
            },
            differs: { $0[keyPath: field] != $1[keyPath: field] },
            take: { section, other in section[keyPath: field] = other[keyPath: field] })
    }
}

/// A mapping of settings declared in a table: the configuration, the `mqtt` section, one entry of a list.
protocol SettingsSection: Sendable, Equatable {
    static var settings: [Setting<Self>] { get }
    /// Every default.
    init()
    /// What the settings' own checks cannot see: settings that go together.
    func checkTogether(at place: Place) throws(Configuration.Invalid)
}

extension SettingsSection {
    func checkTogether(at place: Place) throws(Configuration.Invalid) {}

    /// The section a YAML mapping holds, checked; an unknown key, a missing required one or a wrong
    /// value is an error at its place.
    static func read(_ node: YAMLNode, at place: Place) throws(Configuration.Invalid) -> Self {
        let known = settings.map(\.key).sorted().joined(separator: ", ")
        guard case .mapping(let fields) = node else { throw place.invalid("expected a mapping (key: value lines; known keys: \(known))") }
        var section = Self()
        var given: Set<String> = []
        for (key, value) in fields where !value.isNull {
            // A misspelt key would otherwise be a setting silently not applied.
            guard let setting = settings.first(where: { $0.key == key }) else { throw place.invalid("unknown key \"\(key)\" (known: \(known))") }
            try setting.read(&section, value, place.child(key))
            given.insert(key)
        }
        for setting in settings where setting.required && !given.contains(setting.key) { throw place.invalid("missing \(setting.key)") }
        try section.check(at: place)
        return section
    }

    /// Checks every value, naming its place.
    func check(at place: Place) throws(Configuration.Invalid) {
        for setting in Self.settings { try setting.check(self, place.child(setting.key)) }
        try checkTogether(at: place)
    }
}

extension Setting {
    /// Its entry in motiond.conf(5)'s list of keys (roff lines), with its section's own keys indented.
    var manualEntry: [String] {
        func roff(_ text: String) -> String { text.replacing("\\", with: "\\e").replacing("-", with: "\\-") }
        var text = summary
        if let defaultValue { text += " Default: \(defaultValue)." }
        if isFlag { text += " Also the flag \(flagName)." }
        if Section.self == Configuration.self {
            text += reload == .live ? " Changes on reload." : " Takes effect at the next start."
        }
        return [".TP", ".BR \(roff(key)) \" (\(roff(type).replacing("\"", with: "\\(dq")))\"", roff(text)]
            + (manualEntries.isEmpty ? [] : [".RS"] + manualEntries + [".RE"])
    }
}

extension Configuration {
    /// motiond.conf(5)'s KEYS section (roff), written from the settings' declarations; a test holds
    /// docs/motiond.conf.5 to it.
    static var manualKeys: String { ([".SH KEYS"] + settings.flatMap(\.manualEntry)).joined(separator: "\n") + "\n" }
}
