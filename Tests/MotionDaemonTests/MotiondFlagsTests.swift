import Foundation
import MotionConfiguration
import TestSupport
import Testing

/// motiond's flags are the settings the configuration's table marks as flags: each is on its command
/// line with the table's help, and its value is checked as the file's would be, the error naming the flag.
@Suite struct MotiondFlagsTests {
    static let motiond = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("motiond").path

    @Test func everyFlagTheTableDeclaresIsOnTheCommandLineWithItsHelp() async throws {
        let help = try await runProgram(Self.motiond, ["--help"])
        #expect(help.status == 0)
        let text = help.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for key in Configuration.flagKeys {
            let flag = "--" + key.replacing("_", with: "-")
            #expect(text.contains(flag), "\(flag) in \(text)")
            let said = Configuration.help(key).split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(text.contains(said.prefix(30)), "\(key)'s help: \(said)")
        }
    }

    @Test func aFlagsValueIsCheckedAsTheFilesAndTheErrorNamesTheFlag() async throws {
        let run = try await runProgram(Self.motiond, ["--config", "/dev/null", "--declination", "400"])
        #expect(run.status != 0)
        #expect(run.errors.contains("command line: --declination: 400.0 is outside -180...180 degrees"), "\(run.errors)")
    }
}
