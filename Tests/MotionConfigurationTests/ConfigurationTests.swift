import Foundation
import Testing

@testable import MotionConfiguration

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
        ("log_level: loud", "log_level"),
        ("declination: 400", "declination"),
        ("declination: east", "declination"),
        ("socket: [1, 2]", "socket"),
        ("socket: /a\n  bad: indentation", "2:6"),  // a syntax error gives line and column
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
}
