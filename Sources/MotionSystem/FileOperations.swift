import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The file calls a durable save makes, one method per syscall. `LocalFiles` makes them; a test puts
/// its own in between, to stop a save at a chosen call as a `kill -9` would, or to fail one.
public protocol FileOperations: Sendable {
    /// `mkdir(path, permissions)`; a directory already there is no error.
    func makeDirectory(_ path: String, permissions: FilePermissions) throws(Errno)
    /// `mkstemp(template)` with `FD_CLOEXEC`: a new file whose name replaces the template's trailing
    /// `XXXXXX`, open for writing (owned), and its path.
    func makeTemporaryFile(template: String) throws(Errno) -> TemporaryFile
    /// `write` until all of `bytes` is written.
    func write(_ bytes: [UInt8], to file: borrowing OwnedDescriptor) throws(Errno)
    /// `fsync(file)`.
    func synchronize(_ file: borrowing OwnedDescriptor) throws(Errno)
    /// `close(file)`, now: a step of a save of its own (its owner going would close it too); its
    /// error is not actionable.
    func close(_ file: consuming OwnedDescriptor)
    /// `rename(source, destination)`, atomic within a file system.
    func rename(_ source: String, to destination: String) throws(Errno)
    /// `unlink(path)`; a file already gone is no error.
    func remove(_ path: String)
    /// `open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)`, owned, to `fsync` a directory.
    func openDirectory(_ path: String) throws(Errno) -> OwnedDescriptor
    /// The content of the regular file at `path` (a symbolic link followed), at most `limit` bytes;
    /// anything else is named and not read: no file, a FIFO, a device, a directory, a file longer
    /// than `limit`.
    func regularFileContents(of path: String, atMost limit: Int) throws(Errno) -> RegularFileContents
    /// The names in a directory (none if it cannot be read).
    func entries(of directory: String) -> [String]
}

/// A temporary file `makeTemporaryFile` made: open for writing, and its path.
@frozen public struct TemporaryFile: ~Copyable {
    /// The file, open for writing.
    public var file: OwnedDescriptor
    /// Where it is.
    public let path: String

    public init(file: consuming OwnedDescriptor, path: String) {
        self.file = file
        self.path = path
    }
}

/// What `regularFileContents(of:atMost:)` found at a path.
public enum RegularFileContents: Sendable, Equatable {
    /// There is no file (ENOENT).
    case missing
    /// The bytes of a regular file no longer than the limit.
    case contents([UInt8])
    /// Not a regular file: its kind ("a FIFO", "a character device"…); nothing was read.
    case notRegular(String)
    /// A regular file longer than the limit: its size, bytes; nothing was read.
    case tooLarge(Int64)
}

/// The real calls, on swift-system's `FileDescriptor` where it has them.
public struct LocalFiles: FileOperations {
    public init() {}

    public func makeDirectory(_ path: String, permissions: FilePermissions) throws(Errno) {
        if case .failure(let error) = Syscall.retryingInterrupts({ mkdir(path, permissions.rawValue) }), error != .fileExists {
            throw error
        }
    }

    public func makeTemporaryFile(template: String) throws(Errno) -> TemporaryFile {
        var name = Array(template.utf8CString)
        let fd = try Syscall.retryingInterrupts { name.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) } }.get()
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)  // mkostemp is not in Glibc's module
        return TemporaryFile(file: OwnedDescriptor(fd), path: String(decoding: name.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    public func write(_ bytes: [UInt8], to file: borrowing OwnedDescriptor) throws(Errno) {
        do {
            _ = try FileDescriptor(rawValue: file.rawValue).writeAll(bytes)  // retries EINTR itself
        } catch {
            throw error as? Errno ?? .ioError
        }
    }

    public func synchronize(_ file: borrowing OwnedDescriptor) throws(Errno) {
        _ = try Syscall.retryingInterrupts { fsync(file.rawValue) }.get()
    }

    public func close(_ file: consuming OwnedDescriptor) {
        // Taken here, `file` goes at the return, and its owner's going closes it.
    }

    public func rename(_ source: String, to destination: String) throws(Errno) {
        _ = try Syscall.retryingInterrupts { Glibc.rename(source, destination) }.get()
    }

    public func remove(_ path: String) {
        _ = unlink(path)
    }

    public func openDirectory(_ path: String) throws(Errno) -> OwnedDescriptor {
        OwnedDescriptor(try Syscall.retryingInterrupts { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }.get())
    }

    /// The content of a file, read to its end or until it is longer than `limit` bytes (the caller
    /// then refuses it); `nil` when there is no such file. For files the daemon knows the kind of
    /// (/proc, its configuration); state files go through `regularFileContents`.
    public func contents(of path: String, atMost limit: Int = .max) throws(Errno) -> [UInt8]? {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, .readOnly, options: [.closeOnExec])
        } catch Errno.noSuchFileOrDirectory {
            return nil
        } catch {
            throw error as? Errno ?? .ioError
        }
        defer { try? file.close() }
        var content: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n: Int
            do {
                n = try chunk.withUnsafeMutableBytes { try file.read(into: $0) }
            } catch {
                throw error as? Errno ?? .ioError
            }
            if n == 0 { return content }
            content += chunk[0..<n]
            if content.count > limit { return content }  // the caller refuses it: no need to read /dev/zero to its end
        }
    }

    /// `stat` first, so that a device is never opened (opening some has an effect: a watchdog
    /// starts, a tape rewinds); then `open` with `O_NONBLOCK` (a FIFO swapped in after the `stat`
    /// cannot block the open) and `O_NOCTTY`, and `fstat` of what was opened, which decides; a read
    /// that finds more than `limit` bytes (a file growing, or one `st_size` undercounts, as in
    /// /proc) stops there.
    public func regularFileContents(of path: String, atMost limit: Int) throws(Errno) -> RegularFileContents {
        var status = stat()
        switch Syscall.retryingInterrupts({ stat(path, &status) }) {
        case .failure(.noSuchFileOrDirectory): return .missing
        case .failure(let error): throw error
        case .success: break
        }
        if let kind = Self.irregularKind(status) { return .notRegular(kind) }
        if status.st_size > limit { return .tooLarge(Int64(status.st_size)) }
        let fd: Int32
        switch Syscall.retryingInterrupts({ open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) }) {
        case .failure(.noSuchFileOrDirectory): return .missing
        case .failure(let error): throw error
        case .success(let opened): fd = opened
        }
        let file = FileDescriptor(rawValue: fd)
        defer { try? file.close() }
        _ = try Syscall.retryingInterrupts { fstat(fd, &status) }.get()
        if let kind = Self.irregularKind(status) { return .notRegular(kind) }
        if status.st_size > limit { return .tooLarge(Int64(status.st_size)) }
        var content: [UInt8] = []
        content.reserveCapacity(Int(status.st_size) + 1)
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n: Int
            do {
                n = try chunk.withUnsafeMutableBytes { try file.read(into: $0) }  // retries EINTR itself
            } catch {
                throw error as? Errno ?? .ioError
            }
            if n == 0 { return .contents(content) }
            content += chunk[0..<n]
            if content.count > limit { return .tooLarge(Int64(content.count)) }
        }
    }

    /// What a `stat` describes, in words, when it is not a regular file; `nil` when it is one.
    private static func irregularKind(_ status: stat) -> String? {
        switch status.st_mode & S_IFMT {
        case S_IFREG: nil
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFDIR: "a directory"
        case S_IFSOCK: "a socket"
        default: "a file of type 0o\(String(status.st_mode & S_IFMT, radix: 8))"
        }
    }

    public func entries(of directory: String) -> [String] {
        Syscall.directoryEntries(directory)
    }
}
