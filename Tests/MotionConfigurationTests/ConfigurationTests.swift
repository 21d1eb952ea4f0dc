import Foundation
import Testing

@testable import MotionConfiguration
import MotionCore

@Suite struct ConfigurationTests {
    func file(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "motiond-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).conf"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func everySettingIsRead() throws {
        let path = try file("""
            # motiond.conf
            socket: /run/motiond/motiond.sock
            socket_mode: "0640"
            socket_group: motion
            state_directory: /var/lib/motiond
            state_save_interval: 30
            log_level: debug
            declination: 3.5
            """)
        let c = try Configuration.load(path: path, required: true)
        #expect(c.socket == "/run/motiond/motiond.sock" && c.socketMode == "0640" && c.socketGroup == "motion")
        #expect(c.stateDirectory == "/var/lib/motiond" && c.stateSaveInterval == 30 && c.logLevel == "debug" && c.declination == 3.5)
    }

    /// YAML 1.1's booleans and a list of mappings, as motiond.conf(5) documents them, read by libyaml.
    @Test func theDBusSwitchAndMountMatricesAreRead() throws {
        let path = try file("""
            dbus: yes
            mount_matrices:
              - name: bmi160
                matrix: "0, 1, 0; -1, 0, 0; 0, 0, 1"
              - syspath: /devices/platform/a
                matrix: '1, 0, 0; 0, 1, 0; 0, 0, 1'
            """)
        let c = try Configuration.load(path: path, required: true)
        #expect(c.dbus == true)
        #expect(c.mountMatrices == [
            .init(name: "bmi160", label: nil, syspath: nil, matrix: "0, 1, 0; -1, 0, 0; 0, 0, 1"),
            .init(name: nil, label: nil, syspath: "/devices/platform/a", matrix: "1, 0, 0; 0, 1, 0; 0, 0, 1"),
        ])
        #expect(try Configuration.load(path: file("dbus: off\n"), required: true).dbus == false)
        #expect {
            try Configuration.load(path: file("mount_matrices:\n  - name: x\n    matrx: \"1, 0, 0; 0, 1, 0; 0, 0, 1\"\n"), required: true)
        } throws: { "\($0)".contains("mount_matrices[0]: unknown key \"matrx\"") }
    }

    @Test func aMisspeltKeyIsAnErrorNamingIt() throws {
        let path = try file("log_levle: debug\n")
        #expect {
            try Configuration.load(path: path, required: true)
        } throws: { error in
            "\(error)".contains("unknown key \"log_levle\"") && "\(error)".contains("log_level")
        }
    }

    /// A 'billion laughs' of nested aliases (about 400 bytes; 9^9 values once expanded) used to take
    /// the daemon to 9.2 GB at start; it is refused, quickly and naming the file.
    @Test func aConfigurationOfNestedAliasesIsRefusedBeforeItExpands() throws {
        var text = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n"
        for level in 1...9 {
            let previous = Array(repeating: "*a\(level - 1)", count: 9).joined(separator: ", ")
            text += "a\(level): &a\(level) [\(previous)]\n"
        }
        let path = try file(text)
        let started = Date()
        #expect {
            try Configuration.load(path: path, required: true)
        } throws: { error in
            "\(error)".contains(path) && "\(error)".contains("more than 10000 values once its aliases are expanded")
        }
        #expect(Date().timeIntervalSince(started) < 1)
        let big = try file(String(repeating: "# padding\n", count: 7000))
        #expect(throws: Configuration.Invalid.self) { try Configuration.load(path: big, required: true) }
    }

    /// Issue 40, defect 8 (the state files' rules, which the configuration lacked): only a regular file
    /// is read. A FIFO at the path would block the start (the open is never made: `stat` decides first,
    /// as StateStoreTests checks for the shared reader); a link to a device is named, not read.
    @Test func aConfigurationThatIsNoRegularFileIsRefusedNamingWhatItIs() throws {
        let link = NSTemporaryDirectory() + "motiond-\(getpid())-zero.conf"
        unlink(link)
        #expect(symlink("/dev/zero", link) == 0)
        defer { unlink(link) }
        #expect { try Configuration.load(path: link, required: true) } throws: { "\($0)" == "\(link): is a character device, not a regular file" }
        #expect { try Configuration.load(path: NSTemporaryDirectory(), required: false) } throws: { "\($0)".contains("is a directory, not a regular file") }
        // Save the one device that means "none": `--config /dev/null` is all defaults.
        #expect(try Configuration.load(path: "/dev/null", required: true) == Configuration())
    }

    /// Issue 25, defect 11: a list nested 9,990 deep was refused, but only once built: its release
    /// recursed as deep, and the stack it touched stayed resident (4.9 MB).
    @Test func aDeeplyNestedListIsRefusedAtItsDepthLimit() throws {
        func nested(_ depth: Int) -> String { String(repeating: "[", count: depth) + String(repeating: "]", count: depth) }
        #expect {
            try YAMLNode.parse("declination: \(nested(9990))", maximumNodes: 100_000)
        } throws: { "\($0)" == "nests lists and mappings more than 32 deep" }
        // The document's own mapping is the first level.
        #expect(try YAMLNode.parse("declination: \(nested(31))", maximumNodes: 100_000) != nil)
        #expect(throws: YAMLNode.ParseError.self) { try YAMLNode.parse("declination: \(nested(32))", maximumNodes: 100_000) }
    }

    /// Issue 40, defect 12: a key given twice was accepted, the last winning, so a stale line further
    /// down silently overrode the one a person had just edited.
    @Test(arguments: [
        ("declination: 3\nheight: 1.8\ndeclination: 4\n", "3:1: the key \"declination\" is given twice"),
        ("dsu:\n  slot: 1\n  slot: 2\n", "3:3: the key \"slot\" is given twice"),
    ])
    func aKeyGivenTwiceInOneMappingIsAnErrorNamingItsLine(text: String, expected: String) throws {
        let path = try file(text)
        #expect { try Configuration.load(path: path, required: true) } throws: { "\($0)".contains(expected) }
        // The same key in two mappings is no duplicate: two mount-matrix entries each name a device.
        let two = "mount_matrices:\n  - name: a\n    matrix: \"1, 0, 0; 0, 1, 0; 0, 0, 1\"\n  - name: b\n    matrix: \"1, 0, 0; 0, 1, 0; 0, 0, 1\"\n"
        #expect(try Configuration.load(path: file(two), required: true).mountMatrices?.map(\.name) == ["a", "b"])
    }

    /// A place is written as latitude and longitude, with the altitude if one likes; the live settings carry it.
    @Test func aLocationIsReadWithOrWithoutItsAltitude() throws {
        let berlin = try Configuration.load(path: file("location: \"52.52, 13.40, 34\"\n"), required: true)
        #expect(berlin.live.location == GeographicLocation(latitude: 52.52, longitude: 13.40, altitude: 34))
        #expect(berlin.live.declination == nil, "the model's, not 0")
        let sydney = try Configuration.load(path: file("location: \"-33.87,151.21\"\n"), required: true)
        #expect(sydney.live.location == GeographicLocation(latitude: -33.87, longitude: 151.21))
        #expect(Configuration().live.location == nil)
    }

    @Test func theSampleConfigurationIsValidAndAllDefaults() throws {
        let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../systemd/motiond.conf").standardized.path
        #expect(try Configuration.load(path: sample, required: true) == Configuration())
    }

    @Test func anEmptyFileOrAMissingDefaultFileMeansDefaults() throws {
        #expect(try Configuration.load(path: file("# nothing\n"), required: true) == Configuration())
        #expect(try Configuration.load(path: "/nonexistent/motiond.conf", required: false) == Configuration())
    }

    @Test(arguments: [
        ("socket_mode: \"999\"", "socket_mode"),
        ("state_save_interval: -1", "state_save_interval"),
        // 9.3e9 s overflowed the timer's Int64 nanoseconds (a crash at start); 1e-9 s spun the loop.
        ("state_save_interval: 9.3e9", "state_save_interval"),
        ("state_save_interval: 1e-9", "state_save_interval"),
        ("log_level: loud", "log_level"),
        ("declination: 400", "declination"),
        ("declination: east", "declination"),
        ("location: \"95, 13\"", "location"),  // no latitude beyond the pole
        ("location: \"52.5\"", "location"),
        ("location: \"52.5, 13.4, high\"", "location"),
        ("socket: [1, 2]", "socket"),
        ("socket: /a\n  bad: indentation", "2:6"),  // a syntax error gives line and column
        ("{\"log_level\": \"info\"}\nsocket: /run/x.sock\n", "2:1: did not find expected <document start> after the end of the document: motiond reads one YAML document"),
        ("{\"log_level\": \"info\"}\n\n# the wizard's block\nmount_matrices:\n  - {name: bmg160, matrix: \"1, 0, 0; 0, 1, 0; 0, 0, 1\"}\n", "4:1: did not find expected <document start>"),
        ("log_level: info\n---\nsocket: /run/x.sock\n", "2:1: a second document: motiond reads one YAML document"),
        ("---\nlog_level: info\n...\n---\nlog_level: debug\n", "4:1: a second document"),
        ("log_level: info\n...\nsocket: /run/x.sock\n", "3:1: did not find expected <document start> after the end of the document"),
    ])
    func aBadValueIsAnErrorNamingTheFileAndTheSetting(text: String, setting: String) throws {
        let path = try file(text)
        do {
            _ = try Configuration.load(path: path, required: true)
            Issue.record("\(text) was accepted")
        } catch {
            #expect(error.description.hasPrefix(path), "\(error)")
            #expect(error.description.contains(setting), "\(error)")
        }
    }

    /// Issue 60, defect 11: libyaml reads one document and motiond stopped there, so whatever followed
    /// a top-level flow mapping (valid YAML: `{"log_level": "info"}`) was silently ignored, and so was a
    /// second document after `---` (the bad value cases above, each naming the line where the ignored
    /// content starts); a document that ends with `...` and comments alone is still read.
    @Test func aDocumentEndedByDotsAndCommentsIsRead() throws {
        let path = try file("---\nlog_level: debug\n...\n# the end\n")
        #expect(try Configuration.load(path: path, required: true).logLevel == "debug")
    }

    @Test func aMissingRequiredFileIsAnError() {
        #expect(throws: Configuration.Invalid.self) { try Configuration.load(path: "/nonexistent/motiond.conf", required: true) }
    }

    @Test func flagsOverrideTheFileAndRestartOnlyChangesAreNamed() {
        var file = Configuration()
        file.socket = "/a"
        file.logLevel = "info"
        var flags = Configuration()
        flags.logLevel = "debug"
        let merged = file.overridden(by: flags)
        #expect(merged.socket == "/a" && merged.logLevel == "debug")
        var moved = merged
        moved.socket = "/b"
        moved.declination = 2
        #expect(moved.restartOnlyDifferences(from: merged) == ["socket"])
    }

    /// Each error names the file and the key path down to the value (`mqtt.streams[1].frame`), from
    /// one `Place` carried down as the document is read (no error is built without it and re-wrapped).
    @Test(arguments: [
        ("mount_matrices:\n  - name: a\n    matrix: \"1, 0, 0; 0, 1, 0; 0, 0, 1\"\n  - name: b\n    matrix: \"2, 0, 0; 0, 1, 0; 0, 0, 1\"",
         "mount_matrices[1]: \"2, 0, 0; 0, 1, 0; 0, 0, 1\" is not a rotation"),
        ("mount_matrices:\n  - name: a\n    label: b\n    matrix: \"1, 0, 0; 0, 1, 0; 0, 0, 1\"", "mount_matrices[0]: names exactly one of name, label, syspath (it has 2)"),
        ("mqtt:\n  broker: mqtt://x\n  streams: [motion, {stream: tilt, frame: north}]", "mqtt.streams[1].frame: \"north\" is not one of"),
        ("mqtt:\n  broker: mqtt://x\n  streams: [motion, {stream: tilt, interval: x}]", "mqtt.streams[1].interval: expected a number"),
        ("network_sensors: [ip:a, [b]]", "network_sensors[1]: expected a string"),
        ("socket_mode: \"999\"", "socket_mode: \"999\" is not an octal mode"),
    ])
    func anErrorNamesTheFileAndTheKeyPath(text: String, expected: String) throws {
        let path = try file(text)
        #expect { try Configuration.load(path: path, required: true) } throws: { "\($0)".hasPrefix("\(path): \(expected)") }
    }

    /// A flag is read and checked as the file's key is, and its error names the flag.
    @Test func flagsAreReadAndCheckedAsTheFileIs() throws {
        let flags = try Configuration.flags(["declination": "3.5", "dbus": "true", "socket": nil])
        #expect(flags.declination == 3.5 && flags.dbus == true && flags.socket == nil)
        #expect { try Configuration.flags(["declination": "400"]) } throws: { "\($0)" == "command line: --declination: 400.0 is outside -180...180 degrees" }
        // The sea-level pressure is in kPa: the hPa of a weather report is refused with the unit to use.
        #expect { try Configuration.flags(["sea_level_pressure": "1013.2"]) } throws: { "\($0)".contains("in kPa, not hPa") }
        #expect(try Configuration.flags(["sea_level_pressure": "101.32"]).seaLevelPressure == 101.32)
        #expect { try Configuration.flags(["height": "175"]) } throws: { "\($0)".contains("in metres: 175 cm is 1.75") }
        #expect { try Configuration.flags(["motion_event_heartbeat": "0.5"]) } throws: { "\($0)".contains("must be 1...3600 seconds") }
        #expect { try Configuration.flags(["state_save_interval": "soon"]) } throws: { "\($0)" == "command line: --state-save-interval: expected a number" }
        #expect { try Configuration.flags(["mqtt": "x"]) } throws: { "\($0)".contains("is not a setting motiond takes as a flag") }
        // --dsu is `dsu.listen` alone; the file's `dsu:` takes that or a mapping.
        #expect(try Configuration.flags(["dsu": "127.0.0.1:9"]).dsu == DSUSettings(listen: "127.0.0.1:9"))
        #expect { try Configuration.flags(["dsu": "nowhere"]) } throws: { "\($0)".contains("--dsu: \"nowhere\" is not host:port") }
        // Of two bad flags, the one first in the table is named, whatever the order given.
        #expect { try Configuration.flags(["metrics": "nowhere", "socket_mode": "999"]) } throws: { "\($0)".hasPrefix("command line: --socket-mode:") }
        #expect(Configuration.flagKeys == ["socket", "socket_mode", "socket_group", "state_directory", "state_save_interval", "motion_event_heartbeat", "rebind_stalled_sensors", "chip_functions", "tablet_mode", "log_level", "declination", "location", "sea_level_pressure", "height", "dbus", "metrics", "dsu"])
    }

    /// Only the settings declared live apply on reload; every other key that differs is named as
    /// needing a restart, each of them checked by changing it alone.
    @Test func aReloadNamesEverySettingThatNeedsARestart() throws {
        let base = Configuration()
        let changed: [(String, (inout Configuration) -> Void)] = [
            ("socket", { $0.socket = "/x" }), ("socket_mode", { $0.socketMode = "0600" }), ("socket_group", { $0.socketGroup = "g" }),
            ("state_directory", { $0.stateDirectory = "/s" }), ("state_save_interval", { $0.stateSaveInterval = 5 }),
            ("motion_event_heartbeat", { $0.motionEventHeartbeat = 10 }), ("rebind_stalled_sensors", { $0.rebindStalledSensors = true }),
            ("chip_functions", { $0.chipFunctions = false }), ("tablet_mode", { $0.tabletMode = "off" }),
            ("log_level", { $0.logLevel = "debug" }), ("declination", { $0.declination = 2 }), ("location", { $0.location = "1, 2" }),
            ("sea_level_pressure", { $0.seaLevelPressure = 102 }), ("height", { $0.height = 1.8 }),
            ("mount_matrices", { $0.mountMatrices = [] }), ("dbus", { $0.dbus = true }), ("mqtt", { $0.mqtt = MQTTSettings(broker: "mqtt://x") }),
            ("metrics", { $0.metrics = "127.0.0.1:1" }), ("network_sensors", { $0.networkSensors = ["ip:a"] }),
            ("dsu", { $0.dsu = DSUSettings() }),
        ]
        #expect(Set(changed.map(\.0)) == Set(Configuration.settings.map(\.key)), "every setting is tried")
        for (key, change) in changed {
            var next = base
            change(&next)
            let live = ["log_level", "declination", "location", "sea_level_pressure", "height"].contains(key)
            #expect(next.restartOnlyDifferences(from: base) == (live ? [] : [key]), "\(key)")
        }
    }

    /// docs/motiond.conf.5's KEYS section is the one the settings' declarations write: a setting
    /// added, renamed or given a new default shows in the manual, or this fails with the text to paste.
    @Test func theManualListsTheKeysAsDeclared() throws {
        let manual = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/motiond.conf.5").standardized
        let text = try String(contentsOf: manual, encoding: .utf8)
        let keys = try #require(text.range(of: ".SH KEYS\n")).lowerBound
        let example = try #require(text.range(of: ".SH EXAMPLE\n")).lowerBound
        let written = String(text[keys..<example])
        #expect(written == Configuration.manualKeys, "docs/motiond.conf.5's KEYS section should read:\n\(Configuration.manualKeys)")
    }
}
