import Foundation

/// A system file motionctl edits in place (the local hwdb, motiond.conf), whose other lines are
/// their owner's: read as text or not at all, and written back where it lies, as it was kept.
struct EditedFile {
    let path: String

    /// The text; empty where there is no file. One that cannot be read as text is an error, not an
    /// empty file: written back, its owner's lines would be lost.
    func read() throws -> String {
        FileManager.default.fileExists(atPath: path) ? try String(contentsOfFile: path, encoding: .utf8) : ""
    }

    /// Writes `text` in its place (a rename, so a reader never sees half of it) through a link, not
    /// over it, with the old file's mode and owner: motiond.conf may carry secrets (an MQTT
    /// password) for motiond's group alone.
    func write(_ text: String) throws {
        let path = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        let files = FileManager.default
        try files.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let kept = (try? files.attributesOfItem(atPath: path))?.filter { [.posixPermissions, .ownerAccountID, .groupOwnerAccountID].contains($0.key) }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        if let kept { try files.setAttributes(kept, ofItemAtPath: path) }
    }
}
