import FoundationEssentials
import MotionConfiguration

/// motiond.conf's `mount_matrices` as `motionctl calibrate mount` writes them: a block of its own
/// after a marker line, one entry per device name, so that a later run replaces its entry and the
/// rest of the file stays as its owner wrote it. The file is read with motiond's own loader before
/// and after the edit, and written only if motiond reads the edit as meant: the rest of the file as
/// it was, and the block's entries as set or removed. A file whose owner wrote a `mount_matrices`
/// key (however quoted) is not edited (a second key would make motiond refuse the file): the entry
/// is for them to add.
struct MountMatricesBlock {
    let path: String

    static let marker = "# motionctl calibrate mount: the mount matrices of sensors whose axes disagreed"

    /// What `set` or `remove` did.
    enum Outcome: Equatable {
        case written
        /// `remove`: the file has no entry of this command's.
        case unchanged
        /// The file has a `mount_matrices` key of its owner's: nothing was written.
        case ownedByTheFile
        /// motiond would not read the file, or would not read the edit as meant: nothing was
        /// written; why, naming the file and the line.
        case refused(String)
    }

    /// Sets the entry of the device named `name` to `matrix` ("x1, y1, z1; …").
    func set(name: String, matrix: String) throws -> Outcome {
        var lines = try readLines()
        let before: Configuration
        do { before = try Configuration.parse(text(lines), file: path) } catch { return .refused("motiond does not read it: \(error)") }
        let block = ownBlock(in: lines)
        if block == nil, before.mountMatrices != nil { return .ownedByTheFile }
        let entry = Self.entry(name: name, matrix: matrix)
        if let block {
            let stale = block.entries.filter { Self.isOwnEntry(lines[$0]) && lines[$0].hasPrefix(Self.namePart(name)) }
            lines.insert(entry, at: block.end)
            for index in stale.reversed() { lines.remove(at: index) }
        } else {
            if lines.last.map({ !$0.isEmpty }) ?? false { lines.append("") }
            lines += [Self.marker, "mount_matrices:", entry]
        }
        // motiond must read the same file with this device's entry, and only that, in place of its old one.
        let set = MountMatrixSetting(name: name, matrix: matrix)
        let isThisDevices = { (setting: MountMatrixSetting) in setting.name == name && setting.label == nil && setting.syspath == nil }
        return try write(lines, readAs: before, expecting: (before.mountMatrices ?? []).filter { !isThisDevices($0) }, plus: set)
    }

    /// Removes the entries this command wrote (they follow an accelerometer matrix being undone),
    /// and the block with them where its owner added none of theirs to it.
    func remove() throws -> Outcome {
        var lines = try readLines()
        let before: Configuration
        do { before = try Configuration.parse(text(lines), file: path) } catch { return .refused("motiond does not read it: \(error)") }
        guard let block = ownBlock(in: lines) else { return .unchanged }
        let own = block.entries.filter { Self.isOwnEntry(lines[$0]) }
        // What motiond reads of the lines removed: each an entry this command wrote.
        let removed: [MountMatrixSetting]
        do {
            removed = try Configuration.parse((["mount_matrices:"] + own.map { lines[$0] }).joined(separator: "\n"), file: path).mountMatrices ?? []
        } catch {
            return .refused("an entry of this command's does not read as one: \(error)")
        }
        let others = block.entries.filter { !own.contains($0) && !Self.isBlankOrComment(lines[$0]) }
        if others.isEmpty {
            lines.removeSubrange(block.marker..<block.end)
            if block.marker == lines.count, lines.last == "" { lines.removeLast() }
        } else {
            for index in own.reversed() { lines.remove(at: index) }
        }
        let kept = (before.mountMatrices ?? []).filter { !removed.contains($0) }
        return try write(lines, readAs: before, expecting: kept, plus: nil)
    }

    /// Writes `lines` if motiond reads them as `before` but for `mount_matrices`, whose entries are
    /// `expected` (in order) and `added` (anywhere); else refuses.
    private func write(_ lines: [String], readAs before: Configuration, expecting expected: [MountMatrixSetting], plus added: MountMatrixSetting?) throws -> Outcome {
        let after: Configuration
        do { after = try Configuration.parse(text(lines), file: path) } catch { return .refused("motiond would not read it edited: \(error)") }
        var (rest, restBefore) = (after, before)
        (rest.mountMatrices, restBefore.mountMatrices) = (nil, nil)
        var entries = after.mountMatrices ?? []
        if let added, let index = entries.firstIndex(of: added) { entries.remove(at: index) }
        guard rest == restBefore, entries == expected, added.map({ after.mountMatrices?.contains($0) ?? false }) ?? true else {
            return .refused("motiond would not read the edit as meant: its block is not where this command wrote it")
        }
        try EditedFile(path: path).write(text(lines))
        return .written
    }

    private func readLines() throws -> [String] {
        // A CRLF file read as one line hid its owner's `mount_matrices` key (a second made motiond refuse the file).
        var lines = try EditedFile(path: path, maximumSize: Configuration.maximumFileSize).readLines()
        if lines.last == "" { lines.removeLast() }
        return lines
    }

    private func text(_ lines: [String]) -> String { lines.map { $0 + "\n" }.joined() }

    /// One list entry, the name quoted as YAML's double-quoted scalar.
    static func entry(name: String, matrix: String) -> String { "\(namePart(name)) matrix: \"\(matrix)\"}" }

    private static func namePart(_ name: String) -> String {
        let quoted = name.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"")
        return "  - {name: \"\(quoted)\","
    }

    /// Whether `line` is an entry as this command writes it (`entry(name:matrix:)`); any other in the
    /// block is its owner's.
    private static func isOwnEntry(_ line: String) -> Bool {
        let line = line.hasSuffix("\r") ? String(line.dropLast()) : line
        return line.hasPrefix("  - {name: \"") && line.hasSuffix("\"}") && line.contains("\", matrix: \"")
    }

    private static func isBlankOrComment(_ line: String) -> Bool {
        let trimmed = line.trimmed()
        return trimmed.isEmpty || trimmed.hasPrefix("#")
    }

    /// The block this command wrote: its marker's line, the lines of the key's value (the entries,
    /// this command's and any its owner added, blank lines and comments among them: every line that
    /// is indented or a `-` item), and the line after the last of them.
    private func ownBlock(in lines: [String]) -> (marker: Int, entries: [Int], end: Int)? {
        let trimmed = lines.map { $0.trimmed() }
        guard let start = trimmed.firstIndex(of: Self.marker), start + 1 < lines.count, trimmed[start + 1] == "mount_matrices:" else { return nil }
        var end = start + 2
        var scan = end
        while scan < lines.count {
            if trimmed[scan].isEmpty {
                scan += 1  // a blank line belongs to the block only if more of it follows
                continue
            }
            guard lines[scan].hasPrefix(" ") || lines[scan].hasPrefix("-") else { break }
            scan += 1
            end = scan
        }
        return (start, Array((start + 2)..<end), end)
    }
}
