import ArgumentParser
import FoundationEssentials
import MotionSystem

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
        let file = try Syscall.openWriteOnly(target)
        try Syscall.write(file.rawValue, Array(text.utf8)).get()
    } catch {
        throw ValidationError("\(path): cannot write: \(error)")
    }
}
