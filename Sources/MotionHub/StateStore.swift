import FoundationEssentials
import MotionSystem

/// Keeps a part of the daemon's state (the fusion calibration, the step history) in a file, written
/// atomically: a temporary file in the same directory, `fsync`, `rename` over the old file, `fsync` of
/// the directory. A crash or `kill -9` at any moment leaves either the old state or the new one, never
/// a mix.
package struct StateStore: Sendable {
    /// What went wrong, with the path and errno.
    struct Failure: Error, CustomStringConvertible {
        var operation: String
        var path: String
        var errno: Errno
        var description: String { "\(operation) \(path): \(errnoName(errno.rawValue)) (\(errno))" }
    }

    /// The largest state file read, bytes. The largest state is a full history (`GaitHistory`): every
    /// minute of the week with steps (10,080 pairs) and 4,096 activities, 0.92 MB as the encoder writes
    /// it, 1.06 MB with every number at its widest (`StateStoreTests` measures both); 2 MiB holds that
    /// and keeps a 1 GB file, or /dev/zero, from being read into memory.
    static let maximumFileSize = 2 << 20

    /// The directory of the state (created if missing).
    let directory: String
    let name: String

    var path: String { "\(directory)/\(name)" }

    /// The file calls it makes (a test's own, to stop a save at a chosen call).
    let files: any FileOperations

    package init(directory: String, name: String = "calibration.json", files: any FileOperations = LocalFiles()) {
        self.directory = directory
        self.name = name
        self.files = files
    }

    /// A state file that could not be taken (it does not decode, cannot be read, is not a regular
    /// file or is too large), and where it was put aside for a person to look at.
    struct Corrupt: Error, CustomStringConvertible {
        var path: String
        var keptAt: String
        /// What is wrong with it: "does not decode (…)", "is a FIFO"…
        var reason: String
        var description: String { "\(path) \(reason); kept as \(keptAt)" }
    }

    /// A state file that could not be read nor moved aside: a save would overwrite what may be the
    /// only copy, so the owner must not save (`SavedState` stops saving and says so).
    struct Unusable: Error, CustomStringConvertible {
        var path: String
        var reason: String
        var setAside: Failure
        var description: String { "\(path) \(reason), and cannot be set aside (\(setAside)): not saved over" }
    }

    /// The prefix of temporary files: `<name>.tmp-`.
    private var temporaryPrefix: String { "\(name).tmp-" }

    /// Reads the state; `nil` when there is none yet. Temporary files that a save cut off (kill -9
    /// between write and rename) are removed. Only a regular file of at most `maximumFileSize` bytes
    /// is read (a FIFO would block the start, /dev/zero or a sparse file fill the memory). A file that
    /// cannot be taken — it does not decode, cannot be read (EACCES, EIO), is not a regular file or
    /// is too large — is moved aside to `<name>.corrupt`, so that the next save cannot overwrite it,
    /// and reported as `Corrupt`; the caller starts afresh. One that cannot be moved either is
    /// reported as `Unusable`: the caller must not save over it.
    func load<State: Decodable>(_ type: State.Type) throws -> State? {
        for entry in files.entries(of: directory) where entry.hasPrefix(temporaryPrefix) { files.remove("\(directory)/\(entry)") }
        let data: [UInt8]
        do {
            switch try files.regularFileContents(of: path, atMost: Self.maximumFileSize) {
            case .missing: return nil
            case .contents(let bytes): data = bytes
            case .notRegular(let kind): throw setAside(because: "is \(kind), not a regular file")
            case .tooLarge(let size): throw setAside(because: "is \(size) bytes, more than the \(Self.maximumFileSize) a state file may be")
            }
        } catch let error as Errno {
            throw setAside(because: "cannot be read: \(errnoName(error.rawValue)) (\(error))")
        }
        do {
            return try JSONDecoder().decode(State.self, from: Data(data))
        } catch {
            throw setAside(because: "does not decode (\(error))")
        }
    }

    /// Moves the state file aside to `<name>.corrupt`: the error to report, `Corrupt` once it is there,
    /// `Unusable` when it could not be moved.
    private func setAside(because reason: String) -> any Error {
        let kept = path + ".corrupt"
        do {
            try call("rename", path) { () throws(Errno) in try files.rename(path, to: kept) }
        } catch {
            return Unusable(path: path, reason: reason, setAside: error)
        }
        return Corrupt(path: path, keptAt: kept, reason: reason)
    }

    /// Writes the state atomically.
    func save<State: Encodable>(_ state: State) throws {
        try call("mkdir", directory) { () throws(Errno) in try files.makeDirectory(directory, permissions: .ownerReadWriteExecute) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let bytes = Array(try encoder.encode(state))
        // A name of its own (mkstemp): two saves at once (the periodic one and the one at shutdown)
        // never write the same temporary file; the last rename wins, each file whole.
        let made = try call("mkstemp", path) { () throws(Errno) in
            try files.makeTemporaryFile(template: "\(directory)/\(temporaryPrefix)XXXXXX")
        }
        let temporary = made.path
        let file = made.file
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
        let synchronized = Result { () throws(Failure) in try call("fsync", directory) { () throws(Errno) in try files.synchronize(directoryFile) } }
        files.close(directoryFile)
        try synchronized.get()
    }

    /// Runs one file call, naming the operation and path in its failure.
    private func call<T: ~Copyable>(_ operation: String, _ path: String, _ body: () throws(Errno) -> T) throws(Failure) -> T {
        do {
            return try body()
        } catch {
            throw Failure(operation: operation, path: path, errno: error)
        }
    }
}
