import Foundation
import MotionConfiguration
import MotionCore
import MotionDevices
@testable import MotionCtlCommands
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// motiond.conf's `mount_matrices` as the mount wizard writes them: a block of its own, an entry
/// per device replaced on a later run and all removed by `--undo`, the owner's lines left as they were,
/// and a file whose owner wrote the key left alone. What it writes is read back by motiond's own configuration loader.
@Suite struct MountMatricesBlockTests {
    static func scratch() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mount-matrices-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory + "/motiond.conf"
    }

    @Test func aNewFileGetsTheBlockAndALaterRunReplacesItsEntryKeepingTheOwnersLines() throws {
        let path = try Self.scratch()
        try "# mine\nlog_level: debug\n".write(toFile: path, atomically: true, encoding: .utf8)
        let block = MountMatricesBlock(path: path)
        #expect(try block.set(name: "bmi260", matrix: "0, 1, 0; 1, 0, 0; 0, 0, -1") == .written)
        #expect(try block.set(name: "ak09911", matrix: "-1, 0, 0; 0, 1, 0; 0, 0, -1") == .written)
        #expect(try block.set(name: "bmi260", matrix: "1, 0, 0; 0, 1, 0; 0, 0, 1") == .written)
        let expected = """
            # mine
            log_level: debug

            \(MountMatricesBlock.marker)
            mount_matrices:
              - {name: "ak09911", matrix: "-1, 0, 0; 0, 1, 0; 0, 0, -1"}
              - {name: "bmi260", matrix: "1, 0, 0; 0, 1, 0; 0, 0, 1"}

            """
        #expect(try String(contentsOfFile: path, encoding: .utf8) == expected)
        let overrides = try Configuration.load(path: path, required: true).mountMatrixOverrides()
        #expect(overrides == [
            MountMatrixOverride(match: .name("ak09911"), matrix: Matrix3(rowMajor: [-1, 0, 0, 0, 1, 0, 0, 0, -1])),
            MountMatrixOverride(match: .name("bmi260"), matrix: .identity),
        ])
        // `--undo`: the block goes, the owner's lines stay.
        #expect(try block.remove() == .written)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "# mine\nlog_level: debug\n")
        #expect(try block.remove() == .unchanged)
    }

    @Test func aFileWithItsOwnersMountMatricesIsNotEdited() throws {
        let path = try Self.scratch()
        let owners = "mount_matrices:\n  - {label: accel-display, matrix: \"1, 0, 0; 0, 1, 0; 0, 0, 1\"}\n"
        try owners.write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try MountMatricesBlock(path: path).set(name: "bmi260", matrix: "0, 1, 0; 1, 0, 0; 0, 0, -1") == .ownedByTheFile)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == owners)
    }

    /// The file may hold an MQTT password for motiond's group alone: its mode and group stay.
    @Test func theFilesModeAndOwnerStay() throws {
        let path = try Self.scratch()
        try "log_level: info\n".write(toFile: path, atomically: true, encoding: .utf8)
        let daemonGroup = try #require(getgrnam("daemon")).pointee.gr_gid
        #expect(chmod(path, 0o640) == 0 && chown(path, 0, daemonGroup) == 0)
        #expect(try MountMatricesBlock(path: path).set(name: "bmi260", matrix: "1, 0, 0; 0, 1, 0; 0, 0, 1") == .written)
        var status = stat()
        #expect(stat(path, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o640 && status.st_gid == daemonGroup, "mode \(String(status.st_mode & 0o777, radix: 8)), group \(status.st_gid)")
    }

    /// A file that is no text is not taken for an empty one (written back, its lines would be lost);
    /// a link is written through, not replaced.
    @Test func aFileThatIsNoTextIsLeftAloneAndALinkIsFollowed() throws {
        let path = try Self.scratch()
        let garbage = Data([0xff, 0xfe, 0x00, 0x80])
        try garbage.write(to: URL(fileURLWithPath: path))
        #expect(throws: (any Error).self) { try MountMatricesBlock(path: path).set(name: "bmi260", matrix: "1, 0, 0; 0, 1, 0; 0, 0, 1") }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == garbage)

        let target = try Self.scratch()
        try "log_level: info\n".write(toFile: target, atomically: true, encoding: .utf8)
        let link = try Self.scratch()
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        #expect(try MountMatricesBlock(path: link).set(name: "bmi260", matrix: "1, 0, 0; 0, 1, 0; 0, 0, 1") == .written)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == target)
        #expect(try String(contentsOfFile: target, encoding: .utf8).contains("bmi260"))
    }

    /// A file written on another system, with CRLF line ends: its owner's `mount_matrices` key is
    /// still seen (read as one line, it was not, and a second key made motiond refuse the file), and
    /// the block set and removed leaves the owner's lines as they were, CRs and all.
    @Test func aFileWithCRLFLineEndsIsReadLineByLine() throws {
        let path = try Self.scratch()
        let owners = "# mine\r\nmount_matrices:\r\n  - {label: accel-display, matrix: \"1, 0, 0; 0, 1, 0; 0, 0, 1\"}\r\n"
        try owners.write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try MountMatricesBlock(path: path).set(name: "bmi260", matrix: "0, 1, 0; 1, 0, 0; 0, 0, -1") == .ownedByTheFile)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(owners.utf8))

        let other = "# mine\r\nlog_level: debug\r\n"
        try other.write(toFile: path, atomically: true, encoding: .utf8)
        let block = MountMatricesBlock(path: path)
        #expect(try block.set(name: "bmi260", matrix: "0, 1, 0; 1, 0, 0; 0, 0, -1") == .written)
        #expect(try block.set(name: "bmi260", matrix: "1, 0, 0; 0, 1, 0; 0, 0, 1") == .written)
        #expect(try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "bmi260").count == 2, "one entry, replaced")
        #expect(try block.remove() == .written)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(other.utf8))
    }

    /// A new file is 0644 whatever the umask; a write that fails (here the rename onto a directory)
    /// leaves the directory as it was, no half-written file beside it.
    @Test func aNewFileIsReadableByAllAndAFailedWriteLeavesNothingBehind() throws {
        let path = try Self.scratch()
        let mask = umask(0o077)
        defer { umask(mask) }
        try EditedFile(path: path).write("log_level: info\n")
        var status = stat()
        #expect(stat(path, &status) == 0 && status.st_mode & 0o777 == 0o644, "mode \(String(status.st_mode & 0o777, radix: 8))")

        let directory = (path as NSString).deletingLastPathComponent
        let blocked = directory + "/blocked"
        try FileManager.default.createDirectory(atPath: blocked + "/inside", withIntermediateDirectories: true)
        #expect(throws: EditedFile.Failure.self) { try EditedFile(path: blocked).write("log_level: info\n") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["blocked", "motiond.conf"])
    }

    /// Issue 60, defect 11: the file is read by motiond's own loader before and after the edit. The
    /// owner's key written quoted (`"mount_matrices":`, or as a complex key) was not seen, and a second
    /// key made motiond refuse the file (exit 64): a key of the owner's, however written, leaves the
    /// file alone. After a top-level flow mapping (valid YAML) motiond read nothing more, so the block
    /// appended was ignored; a file motiond refuses is not edited either: the wizard writes only what
    /// motiond then reads as its entry, else nothing, and says why, naming the file and the line.
    @Test(arguments: [
        ("\"mount_matrices\":\n  - {label: accel-display, matrix: \"1, 0, 0; 0, 1, 0; 0, 0, 1\"}\n", nil),
        ("'mount_matrices': [{label: accel-display, matrix: \"1, 0, 0; 0, 1, 0; 0, 0, 1\"}]\n", nil),
        ("? mount_matrices\n: [{label: accel-display, matrix: \"1, 0, 0; 0, 1, 0; 0, 0, 1\"}]\n", nil),
        ("{\"log_level\": \"info\"}\n", "4:1: did not find expected <document start> after the end of the document"),
        ("log_level: info\n---\nheight: 1.8\n", "2:1: a second document"),
        ("log_level: [loud\n", "2:1: did not find expected ',' or ']'"),
    ] as [(String, String?)])
    func aFileMotiondWouldNotReadTheEntryFromAsMeantIsNotEdited(text: String, refusal: String?) throws {
        let path = try Self.scratch()
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let outcome = try MountMatricesBlock(path: path).set(name: "bmi260", matrix: "0, 1, 0; 1, 0, 0; 0, 0, -1")
        if let refusal {
            guard case .refused(let why) = outcome else {
                Issue.record("\(outcome)")
                return
            }
            #expect(why.contains("\(path): \(refusal)"), "\(why)")
        } else {
            #expect(outcome == .ownedByTheFile)
            #expect(try Configuration.load(path: path, required: true).mountMatrices?.count == 1)
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == text)
    }

    /// Issue 60, defect 11: `--undo` removed the whole block, with an entry its owner had added inside
    /// it (a block-style one lost its first line and left the rest dangling). Only the wizard's own
    /// entries go; the owner's stay, read by motiond's loader as they were, also after another run.
    @Test func theOwnersEntriesInsideTheBlockStay() throws {
        let path = try Self.scratch()
        let owners = [
            #"  - {label: accel-display, matrix: "0, 1, 0; 1, 0, 0; 0, 0, -1"}"#,
            "  - label: accel-base",
            #"    matrix: "-1, 0, 0; 0, -1, 0; 0, 0, 1""#,
        ]
        let text = (["log_level: info", "", MountMatricesBlock.marker, "mount_matrices:", MountMatricesBlock.entry(name: "bmg160", matrix: "0, 1, 0; 1, 0, 0; 0, 0, -1")] + owners).joined(separator: "\n") + "\n"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let block = MountMatricesBlock(path: path)
        let theirs = [
            MountMatrixSetting(label: "accel-display", matrix: "0, 1, 0; 1, 0, 0; 0, 0, -1"),
            MountMatrixSetting(label: "accel-base", matrix: "-1, 0, 0; 0, -1, 0; 0, 0, 1"),
        ]
        #expect(try block.set(name: "ak09911", matrix: "-1, 0, 0; 0, 1, 0; 0, 0, -1") == .written)
        let both = try #require(try Configuration.load(path: path, required: true).mountMatrices)
        #expect(both.count == 4 && theirs.allSatisfy(both.contains), "\(both)")
        #expect(try block.remove() == .written)
        #expect(try Configuration.load(path: path, required: true).mountMatrices == theirs)
        #expect(try String(contentsOfFile: path, encoding: .utf8).contains(owners.joined(separator: "\n") + "\n"))
    }

    @Test func aNameIsQuotedAsYAMLReadsIt() {
        #expect(MountMatricesBlock.entry(name: #"a"b\c"#, matrix: "1, 0, 0; 0, 1, 0; 0, 0, 1") == #"  - {name: "a\"b\\c", matrix: "1, 0, 0; 0, 1, 0; 0, 0, 1"}"#)
    }
}
