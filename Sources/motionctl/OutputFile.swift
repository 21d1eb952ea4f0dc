import ArgumentParser
import Foundation

/// Writes an offline command's output to `path`: a regular file, or a new one, atomically (a reader
/// never sees half of it, and a failed write leaves the old file); anything else, such as
/// `/dev/null`, `/dev/stdout` or a named pipe, by writing into it. Atomically, Foundation renames a
/// temporary file over the path, and run as root `--output /dev/null` left a regular file where
/// the device had been, for every program after it to write into.
func writeOutput(_ text: String, to path: String) throws {
    do {
        let type = try? FileManager.default.attributesOfItem(atPath: path)[.type] as? FileAttributeType
        guard let type, type != .typeRegular else {
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return
        }
        guard let handle = FileHandle(forWritingAtPath: path) else { throw CocoaError(.fileWriteNoPermission) }
        defer { try? handle.close() }
        try handle.write(contentsOf: Data(text.utf8))
    } catch {
        throw ValidationError("\(path): cannot write: \(error.localizedDescription)")
    }
}
