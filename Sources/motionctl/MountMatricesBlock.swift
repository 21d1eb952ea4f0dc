import Foundation

/// motiond.conf's `mount_matrices` as `motionctl calibrate mount` writes them: a block of its own
/// after a marker line, one entry per device name, so that a later run replaces its entry and the
/// rest of the file stays as its owner wrote it. A file whose owner wrote a `mount_matrices` key
/// is not edited (a second key would make motiond refuse the file): the entry is for them to add.
struct MountMatricesBlock {
    let path: String

    static let marker = "# motionctl calibrate mount: the mount matrices of sensors whose axes disagreed"

    /// What `set` did.
    enum Outcome: Equatable {
        case written
        /// The file has a `mount_matrices` key of its owner's: nothing was written.
        case ownedByTheFile
    }

    /// Sets the entry of the device named `name` to `matrix` ("x1, y1, z1; …").
    func set(name: String, matrix: String) throws -> Outcome {
        var lines = try readLines()
        let block = ownBlock(in: lines)
        let outside = lines.indices.filter { !(block?.contains($0) ?? false) }
        if outside.contains(where: { lines[$0].hasPrefix("mount_matrices") }) { return .ownedByTheFile }
        var entries = block.map { Array(lines[($0.lowerBound + 2)..<$0.upperBound]) } ?? []
        entries.removeAll { $0.hasPrefix(Self.namePart(name)) }
        entries.append(Self.entry(name: name, matrix: matrix))
        let written = [Self.marker, "mount_matrices:"] + entries
        if let block {
            lines.replaceSubrange(block, with: written)
        } else {
            if lines.last.map({ !$0.isEmpty }) ?? false { lines.append("") }
            lines += written
        }
        try write(lines)
        return .written
    }

    /// Removes the block this command wrote (its entries follow an accelerometer matrix being
    /// undone); returns whether there was one.
    func remove() throws -> Bool {
        var lines = try readLines()
        guard let block = ownBlock(in: lines) else { return false }
        lines.removeSubrange(block)
        if lines.last == "" { lines.removeLast() }
        try write(lines)
        return true
    }

    private func readLines() throws -> [String] {
        // A CRLF file read as one line hid its owner's `mount_matrices` key (a second made motiond refuse the file).
        var lines = try EditedFile(path: path).readLines()
        if lines.last == "" { lines.removeLast() }
        return lines
    }

    private func write(_ lines: [String]) throws { try EditedFile(path: path).write(lines.map { $0 + "\n" }.joined()) }

    /// One list entry, the name quoted as YAML's double-quoted scalar.
    static func entry(name: String, matrix: String) -> String { "\(namePart(name)) matrix: \"\(matrix)\"}" }

    private static func namePart(_ name: String) -> String {
        let quoted = name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return "  - {name: \"\(quoted)\","
    }

    /// The lines of the block this command wrote: the marker, the key, and its entries.
    private func ownBlock(in lines: [String]) -> Range<Int>? {
        let trimmed = lines.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        guard let start = trimmed.firstIndex(of: Self.marker), start + 1 < lines.count, trimmed[start + 1] == "mount_matrices:" else { return nil }
        var end = start + 2
        while end < lines.count, lines[end].hasPrefix("  - ") { end += 1 }
        return start..<end
    }
}
