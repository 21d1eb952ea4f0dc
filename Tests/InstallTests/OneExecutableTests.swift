import Foundation
import Testing
import TestSupport

/// The package installs one executable: `motiond`, which is `motionctl` when called by that name
/// (`/usr/bin/motionctl` a link to it: issue 63). Checked against the development build's standalone
/// `motionctl`, the reference for what motionctl says.
@Suite struct OneExecutableTests {
    static var products: String { ReplayDaemon.products.path }

    /// A directory holding `motionctl`, a symbolic link to the built `motiond`, as the package installs it.
    static func linkedMotionctl() throws -> String {
        let directory = NSTemporaryDirectory() + "motiond-link-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: directory + "/motionctl", withDestinationPath: products + "/motiond")
        return directory + "/motionctl"
    }

    @Test func motiondCalledMotionctlIsMotionctl() async throws {
        let linked = try Self.linkedMotionctl()
        defer { try? FileManager.default.removeItem(atPath: (linked as NSString).deletingLastPathComponent) }
        let help = try await runProgram(linked, ["--help"])
        let reference = try await runProgram(Self.products + "/motionctl", ["--help"])
        #expect(help.status == 0, "\(help.errors)")
        #expect(help.output.contains("USAGE: motionctl <subcommand>"), "\(help.output)")
        #expect(help.output == reference.output)
        // A subcommand's own help: the dispatch hands every argument on, not just the first.
        let watch = try await runProgram(linked, ["watch", "--help"])
        let watchReference = try await runProgram(Self.products + "/motionctl", ["watch", "--help"])
        #expect(watch.status == 0, "\(watch.errors)")
        #expect(watch.output == watchReference.output)
        let version = try await runProgram(linked, ["--version"])
        let versionReference = try await runProgram(Self.products + "/motionctl", ["--version"])
        #expect(version.status == 0, "\(version.errors)")
        #expect(!version.output.isEmpty && version.output == versionReference.output)
        // motionctl's own failures keep their status: an unknown subcommand is a usage error (64, EX_USAGE).
        let unknown = try await runProgram(linked, ["no-such-command"])
        let unknownReference = try await runProgram(Self.products + "/motionctl", ["no-such-command"])
        #expect(unknown.status == unknownReference.status)
        #expect(unknown.status != 0)
    }

    @Test func motiondCalledByItsOwnNameIsMotiond() async throws {
        let help = try await runProgram(Self.products + "/motiond", ["--help"])
        #expect(help.status == 0, "\(help.errors)")
        #expect(help.output.contains("USAGE: motiond "), "\(help.output)")
        #expect(!help.output.contains("motionctl <subcommand>"))
        // One release: motiond's version is motionctl's (both Release.version).
        let version = try await runProgram(Self.products + "/motiond", ["--version"])
        let versionReference = try await runProgram(Self.products + "/motionctl", ["--version"])
        #expect(version.status == 0, "\(version.errors)")
        #expect(!version.output.isEmpty && version.output == versionReference.output)
    }
}
