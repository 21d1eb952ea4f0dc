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

    /// Reads the state; `nil` when there is none yet. A file that does not decode is an error (the
    /// caller logs it and starts afresh; the file is left for a person to look at).
    func load<State: Decodable>(_ type: State.Type) throws -> State? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return try JSONDecoder().decode(State.self, from: data)
    }

    /// Writes the state atomically.
    func save<State: Encodable>(_ state: State) throws {
        try makeDirectory()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let bytes = Array(try encoder.encode(state))
        let temporary = "\(path).tmp-\(getpid())"
        let fd = try call("open", temporary) { open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600) }
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
        _ = try call("rename", temporary) { rename(temporary, path) }
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
