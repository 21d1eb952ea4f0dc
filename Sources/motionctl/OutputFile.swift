import ArgumentParser
import Foundation

/// Writes an offline command's output to `path`. A regular file (or a new one, or a symlink to one)
/// is replaced atomically; anything else (`/dev/null`, `/dev/stdout`, a pipe) is written into:
/// renamed over, as root, `/dev/null` became a regular file.
func writeOutput(_ text: String, to path: String) throws {
    let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    do {
        let type = try? FileManager.default.attributesOfItem(atPath: target)[.type] as? FileAttributeType
        guard let type, type != .typeRegular else {
            try text.write(toFile: target, atomically: true, encoding: .utf8)
            return
        }
        guard let handle = FileHandle(forWritingAtPath: target) else { throw CocoaError(.fileWriteNoPermission) }
        defer { try? handle.close() }
        try handle.write(contentsOf: Data(text.utf8))
    } catch {
        throw ValidationError("\(path): cannot write: \(error.localizedDescription)")
    }
}
