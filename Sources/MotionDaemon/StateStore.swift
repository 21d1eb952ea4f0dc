import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Keeps the daemon's state (the fusion calibration) in a file, written atomically: a temporary file
/// in the same directory, `fsync`, `rename` over the old file, `fsync` of the directory. A crash or
/// `kill -9` at any moment leaves either the old state or the new one, never a mix.
struct StateStore: Sendable {
    /// What went wrong, with the path and errno.
    struct Failure: Error, CustomStringConvertible {
        var operation: String
        var path: String
        var errno: Int32
        var description: String { "\(operation) \(path): \(String(cString: strerror(errno)))" }
    }

    /// The directory of the state (created if missing).
    let directory: String
    /// The state file's name.
    let name: String

    var path: String { "\(directory)/\(name)" }

    init(directory: String, name: String = "calibration.json") {
        self.directory = directory
        self.name = name
    }

    /// A state file that did not decode, and where it was put aside for a person to look at.
    struct Corrupt: Error, CustomStringConvertible {
        var path: String
        var keptAt: String
        var reason: String
        var description: String { "\(path) does not decode (\(reason)); kept as \(keptAt)" }
    }

    /// The prefix of temporary files: `<name>.tmp-`.
    private var temporaryPrefix: String { "\(name).tmp-" }

    /// Reads the state; `nil` when there is none yet. Temporary files that a save cut off (kill -9
    /// between write and rename) are removed. A file that does not decode is moved aside to
    /// `<name>.corrupt` (so the next save cannot overwrite it) and reported as `Corrupt`; the
    /// caller starts afresh.
    func load<State: Decodable>(_ type: State.Type) throws -> State? {
        removeOrphans()
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        do {
            return try JSONDecoder().decode(State.self, from: data)
        } catch {
            let kept = path + ".corrupt"
            _ = try call("rename", path) { rename(path, kept) }
            throw Corrupt(path: path, keptAt: kept, reason: "\(error)")
        }
    }

    /// Removes the temporary files of saves that never reached their rename.
    private func removeOrphans() {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for entry in entries where entry.hasPrefix(temporaryPrefix) { unlink("\(directory)/\(entry)") }
    }

    /// Writes the state atomically.
    func save<State: Encodable>(_ state: State) throws {
        try makeDirectory()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let bytes = Array(try encoder.encode(state))
        // A name of its own (mkstemp): two saves at once (the periodic one and the one at shutdown)
        // never write the same temporary file; the last rename wins, each file whole.
        var template = Array("\(directory)/\(temporaryPrefix)XXXXXX".utf8CString)
        let fd = try call("mkstemp", path) { template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) } }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)  // mkostemp is not in Glibc's module
        let temporary = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        do {
            var offset = 0
            while offset < bytes.count {
                let n = try call("write", temporary) { bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) } }
                offset += n
            }
            _ = try call("fsync", temporary) { fsync(fd) }
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        do {
            _ = try call("rename", temporary) { rename(temporary, path) }
        } catch {
            unlink(temporary)
            throw error
        }
        let directoryDescriptor = try call("open", directory) { open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        defer { close(directoryDescriptor) }
        _ = try call("fsync", directory) { fsync(directoryDescriptor) }
    }

    private func makeDirectory() throws {
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw Failure(operation: "mkdir", path: directory, errno: errno)
        }
    }

    /// Runs a libc call that returns −1 on failure (retrying EINTR), turning the failure into a `Failure`.
    private func call<T: BinaryInteger>(_ operation: String, _ path: String, _ body: () -> T) throws -> T {
        while true {
            let result = body()
            if result >= 0 { return result }
            if errno == EINTR { continue }
            throw Failure(operation: operation, path: path, errno: errno)
        }
    }
}
