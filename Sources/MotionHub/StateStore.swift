import FoundationEssentials
import MotionSystem

/// Keeps the daemon's state (the fusion calibration) in a file, written atomically: a temporary file
/// in the same directory, `fsync`, `rename` over the old file, `fsync` of the directory. A crash or
/// `kill -9` at any moment leaves either the old state or the new one, never a mix.
package struct StateStore: Sendable {
    /// What went wrong, with the path and errno.
    struct Failure: Error, CustomStringConvertible {
        var operation: String
        var path: String
        var errno: Errno
        var description: String { "\(operation) \(path): \(errno)" }
    }

    /// The directory of the state (created if missing).
    let directory: String
    /// The state file's name.
    let name: String

    var path: String { "\(directory)/\(name)" }

    /// The file calls it makes (a test's own, to stop a save at a chosen call).
    let files: any FileOperations

    package init(directory: String, name: String = "calibration.json", files: any FileOperations = LocalFiles()) {
        self.directory = directory
        self.name = name
        self.files = files
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
        guard let data = try call("read", path, { () throws(Errno) in try files.contents(of: path, atMost: .max) }) else { return nil }
        do {
            return try JSONDecoder().decode(State.self, from: Data(data))
        } catch {
            let kept = path + ".corrupt"
            try call("rename", path) { () throws(Errno) in try files.rename(path, to: kept) }
            throw Corrupt(path: path, keptAt: kept, reason: "\(error)")
        }
    }

    /// Removes the temporary files of saves that never reached their rename.
    private func removeOrphans() {
        for entry in files.entries(of: directory) where entry.hasPrefix(temporaryPrefix) { files.remove("\(directory)/\(entry)") }
    }

    /// Writes the state atomically.
    func save<State: Encodable>(_ state: State) throws {
        try call("mkdir", directory) { () throws(Errno) in try files.makeDirectory(directory, permissions: .ownerReadWriteExecute) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let bytes = Array(try encoder.encode(state))
        // A name of its own (mkstemp): two saves at once (the periodic one and the one at shutdown)
        // never write the same temporary file; the last rename wins, each file whole.
        let (file, temporary) = try call("mkstemp", path) { () throws(Errno) in
            try files.makeTemporaryFile(template: "\(directory)/\(temporaryPrefix)XXXXXX")
        }
        do {
            try call("write", temporary) { () throws(Errno) in try files.write(bytes, to: file) }
            try call("fsync", temporary) { () throws(Errno) in try files.synchronize(file) }
        } catch {
            files.close(file)
            files.remove(temporary)
            throw error
        }
        files.close(file)
        do {
            try call("rename", temporary) { () throws(Errno) in try files.rename(temporary, to: path) }
        } catch {
            files.remove(temporary)
            throw error
        }
        let directoryFile = try call("open", directory) { () throws(Errno) in try files.openDirectory(directory) }
        defer { files.close(directoryFile) }
        try call("fsync", directory) { () throws(Errno) in try files.synchronize(directoryFile) }
    }

    /// Runs one file call, naming the operation and path in its failure.
    private func call<T>(_ operation: String, _ path: String, _ body: () throws(Errno) -> T) throws(Failure) -> T {
        do {
            return try body()
        } catch {
            throw Failure(operation: operation, path: path, errno: error)
        }
    }
}
