import FoundationEssentials
import MotionSystem

#if canImport(Glibc)
import Glibc
#endif

/// A system file motionctl edits in place (the local hwdb, motiond.conf), whose other lines are
/// their owner's: read as text or not at all, and written back where it lies, as it was kept.
struct EditedFile {
    let path: String
    /// The most it reads, bytes: a larger file is refused, not read (a 100 MB one took 442 MB).
    var maximumSize = 1 << 20

    /// A read or write that failed: what, and the system's reason.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The text; empty where there is no file. One that cannot be read as text is an error, not an
    /// empty file: written back, its owner's lines would be lost. Only a regular file is read, opened
    /// without blocking (a FIFO would hang the command) and only up to `maximumSize`.
    func read() throws -> String {
        let found: RegularFileContents
        do {
            found = try LocalFiles().regularFileContents(of: path, atMost: maximumSize)
        } catch {
            throw Failure(description: "cannot read \(path): \(error)")
        }
        switch found {
        case .missing: return ""
        case .notRegular(let kind): throw Failure(description: "\(path) is \(kind), not a regular file")
        case .tooLarge(let size): throw Failure(description: "\(path) is \(size) bytes, more than the \(maximumSize) this command edits")
        case .contents(let bytes) where bytes.count > maximumSize:
            throw Failure(description: "\(path) is more than the \(maximumSize) bytes this command edits")
        case .contents(let bytes):
            guard let text = String(validating: bytes, as: UTF8.self) else { throw Failure(description: "\(path) is not UTF-8 text") }
            return text
        }
    }

    /// The text's lines, split on LF alone: a CRLF line keeps its CR, as its owner wrote it (a String's
    /// own splitting takes "\r\n" for one Character, no "\n", and a CRLF file for one line). The
    /// last is empty where the text ends with a newline.
    func readLines() throws -> [String] {
        Array(try read().utf8).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Writes `text` in its place through a link, not over it: a new file beside it, given the old
    /// one's owner and mode before anything is written to it (motiond.conf may carry secrets, an
    /// MQTT password, for motiond's group alone; mkstemp makes it 0600 till then), then renamed over
    /// it, so that a reader never sees half of it. A new file is 0644.
    func write(_ text: String) throws {
        let path = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        let directory = deletingLastPathComponent(of: path)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var old = stat()
        let exists = stat(path, &old) == 0
        // Only a file that is not there is new: one that cannot be looked at keeps its mode unknown.
        if !exists && errno != ENOENT { throw Self.failure("cannot look at \(path)") }
        var template = Array("\(directory)/.\(lastPathComponent(of: path)).XXXXXX".utf8CString)
        let descriptor = mkstemp(&template)
        guard descriptor >= 0 else { throw Self.failure("cannot make a file in \(directory)") }
        let file = OwnedDescriptor(descriptor)
        let temporary = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        do {
            // The owner first: a chown clears the set-id bits a chmod gave.
            if exists, fchown(descriptor, old.st_uid, old.st_gid) != 0 { throw Self.failure("cannot give \(temporary) \(path)'s owner") }
            if fchmod(descriptor, exists ? old.st_mode & 0o7777 : 0o644) != 0 { throw Self.failure("cannot give \(temporary) \(path)'s mode") }
            do {
                try LocalFiles().write(Array(text.utf8), to: file)
                try LocalFiles().synchronize(file)
            } catch {
                throw Failure(description: "cannot write \(temporary): \(error)")
            }
            if rename(temporary, path) != 0 { throw Self.failure("cannot rename \(temporary) to \(path)") }
        } catch {
            unlink(temporary)
            throw error
        }
    }

    /// The failure `what`, with the system's reason (`errno`, read before anything else can change it).
    private static func failure(_ what: @autoclosure () -> String) -> Failure {
        let code = errno
        return Failure(description: "\(what()): \(String(cString: strerror(code)))")
    }
}
