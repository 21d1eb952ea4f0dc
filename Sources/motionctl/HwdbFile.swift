import FoundationEssentials
import MotionSystem

/// The local hwdb file: records this command wrote follow a marker line naming their key, so that
/// a new matrix replaces the old one and `--undo` removes it, and other records are left alone.
/// An edit is made on a copy first, compiled with the other hwdb files by systemd-hwdb under a root
/// of its own and checked there; only then does it take the file's place, so that a check that
/// fails leaves the file (or the one a link leads to) as it was.
struct HwdbFile {
    /// The file, under `root`.
    let path: String
    /// The root systemd-hwdb reads (`--root`); "" for /.
    var root = ""

    /// The directories systemd-hwdb reads, in any of its builds (Debian 12's reads /lib/udev, a
    /// merged-/usr one /usr/lib/udev; files of one name are read once).
    static let directories = ["/etc/udev/hwdb.d", "/run/udev/hwdb.d", "/lib/udev/hwdb.d", "/usr/lib/udev/hwdb.d"]

    /// The largest hwdb file this command edits, bytes: systemd's whole 60-sensor.hwdb is 45 kB.
    static let maximumSize = 1 << 20

    /// An edit refused: what the check found. Nothing was written.
    struct Refusal: Error, CustomStringConvertible {
        var description: String
    }

    static func marker(_ key: String) -> String { "# motionctl calibrate mount: \(key)" }

    /// Replaces the record after `key`'s marker by `text` (nil: removes it); returns whether there was
    /// one. With `expecting` (a property line such as `ACCEL_MOUNT_MATRIX=…`), the copy compiled with
    /// the other files must give it for `key`. What systemd-hwdb says of the record's own lines is a
    /// refusal; what it says of other lines and files is theirs, said again when the hwdb is updated.
    @discardableResult
    func replace(_ key: String, with text: String?, expecting: String? = nil) throws -> Bool {
        let file = EditedFile(path: path, maximumSize: Self.maximumSize)
        // Records end at a blank line, one of spaces or a CR among them (a file edited on another
        // system): the hwdb's parser skips those too.
        var records: [[String]] = [[]]
        for line in try file.readLines() {
            if line.trimmed().isEmpty {
                if !records[records.count - 1].isEmpty { records.append([]) }
            } else {
                records[records.count - 1].append(line)
            }
        }
        records.removeAll(where: \.isEmpty)
        let marker = Self.marker(key)
        let before = records.count
        records.removeAll { $0[0].trimmed() == marker }
        let hadOne = records.count < before
        // Nothing to remove: the file is left as it is (or not made).
        if text == nil && !hadOne { return false }
        let others = records.map { $0.joined(separator: "\n") }.joined(separator: "\n\n")
        var edited = others.isEmpty ? "" : others + "\n"
        var ownLines = 0..<0
        if let text {
            if !edited.isEmpty { edited += "\n" }
            let first = edited.split(separator: "\n", omittingEmptySubsequences: false).count
            let record = marker + "\n" + text.trimmed(\.isNewline) + "\n"
            edited += record
            ownLines = first..<(first + record.split(separator: "\n").count)
        }
        try check(edited, ownLines: ownLines, key: key, expecting: expecting)
        try file.write(edited)
        return hadOne
    }

    /// Compiles `text` as this file, with copies of the other hwdb files, under a root of its own;
    /// refuses if systemd-hwdb fails or warns of a line in `ownLines` (1-based), or does not give
    /// `expecting` for `key`.
    private func check(_ text: String, ownLines: Range<Int>, key: String, expecting: String?) throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("motionctl-hwdb-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let name = lastPathComponent(of: path)
        let copy = scratch + "/etc/udev/hwdb.d/" + name
        do {
            try copyOthers(into: scratch)
            try text.write(toFile: copy, atomically: false, encoding: .utf8)
        } catch let refusal as Refusal {
            throw refusal
        } catch {
            throw Refusal(description: "cannot make a copy of the hwdb to check the edit in \(scratch): \(error)")
        }
        let update = try runCapturing("systemd-hwdb", ["--root", scratch, "update"])
        // Its warnings name the file and line: "<file>:<line>: <problem>".
        let own = update.errors.split(separator: "\n").filter { warning in
            guard warning.hasPrefix(copy + ":"), let line = Int(warning.dropFirst(copy.count + 1).prefix { $0.isNumber }) else { return false }
            return ownLines.contains(line)
        }
        guard update.status == 0, own.isEmpty else {
            throw Refusal(description: "systemd-hwdb does not take the entry: " + (own.isEmpty ? update.errors : own.joined(separator: "\n")).replacing(copy, with: path))
        }
        guard let expecting else { return }
        let found = try runCapturing("systemd-hwdb", ["--root", scratch, "query", key])
        guard found.output.split(separator: "\n").contains(Substring(expecting)) else {
            throw Refusal(description: "the hwdb would not give the entry for its key (another file's record wins?): it gives \(found.output.isEmpty ? "nothing" : found.output)\(found.errors)")
        }
    }
}

extension HwdbFile {
    /// The most this command copies of the other hwdb files to check an edit with, bytes: systemd's
    /// own come to 8.7 MB (Debian 12's /lib/udev/hwdb.d, systemd 252), and the copy goes to the
    /// temporary directory, perhaps memory.
    static let maximumCopied = 64 << 20

    /// Copies the hwdb files but this one into the same directories under `scratch`; returns the
    /// bytes copied. A directory reached again (merged /usr: /lib is a link to usr/lib) is copied
    /// once, its second place in the copy a link to the first, as on the machine: systemd-hwdb reads
    /// only its own build's one (UDEVLIBEXECDIR: /lib/udev on Debian 12, /usr/lib/udev elsewhere).
    /// Throws a `Refusal` past `maximumCopied` in all.
    @discardableResult
    func copyOthers(into scratch: String) throws -> Int {
        let name = lastPathComponent(of: path)
        let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        var copied = 0
        // Each directory read, by where it really is, and where its copy is, under `scratch`.
        var copies: [String: String] = [:]
        for directory in Self.directories {
            let real = URL(fileURLWithPath: root + directory).resolvingSymlinksInPath().path
            if let first = copies[real] {
                let parent = deletingLastPathComponent(of: directory)
                try FileManager.default.createDirectory(atPath: scratch + parent, withIntermediateDirectories: true)
                // Relative: systemd-hwdb --root reads an absolute link's target outside the root.
                let up = String(repeating: "../", count: parent.split(separator: "/").count)
                try FileManager.default.createSymbolicLink(atPath: scratch + directory, withDestinationPath: up + first.dropFirst())
                continue
            }
            copies[real] = directory
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: root + directory)) ?? []
            try FileManager.default.createDirectory(atPath: scratch + directory, withIntermediateDirectories: true)
            for entry in entries.sorted() where entry.hasSuffix(".hwdb") && !(directory == "/etc/udev/hwdb.d" && entry == name) {
                // Links resolved here: under --root an absolute link would lead inside the scratch root.
                let source = URL(fileURLWithPath: root + directory + "/" + entry).resolvingSymlinksInPath().path
                // Regular files only: a FIFO would block the copy (systemd-hwdb too, but not here first).
                guard source != target, let attributes = try? FileManager.default.attributesOfItem(atPath: source),
                    attributes[.type] as? FileAttributeType == .typeRegular
                else { continue }
                copied += attributes[.size] as? Int ?? 0
                guard copied <= Self.maximumCopied else {
                    throw Refusal(description: "the hwdb files come to more than \(Self.maximumCopied) bytes, the most this command copies to check an edit with, at \(source)")
                }
                try FileManager.default.copyItem(atPath: source, toPath: scratch + directory + "/" + entry)
            }
        }
        return copied
    }
}

/// A program's exit status and what it wrote, run to its end: `program` looked for on `PATH`, its
/// standard output and error read together (`ChildProcess.run`).
func runCapturing(_ program: String, _ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
    let finished = try ChildProcess.run(program, arguments)
    return (finished.status, String(decoding: finished.output, as: UTF8.self), String(decoding: finished.errors, as: UTF8.self))
}
