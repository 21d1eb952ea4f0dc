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
    /// `XXXXXX`; returns it open for writing, and its path.
    func makeTemporaryFile(template: String) throws(Errno) -> (FileDescriptor, String)
    /// `write` until all of `bytes` is written.
    func write(_ bytes: [UInt8], to file: FileDescriptor) throws(Errno)
    /// `fsync(file)`.
    func synchronize(_ file: FileDescriptor) throws(Errno)
    /// `close(file)`; its error is not actionable.
    func close(_ file: FileDescriptor)
    /// `rename(source, destination)`, atomic within a file system.
    func rename(_ source: String, to destination: String) throws(Errno)
    /// `unlink(path)`; a file already gone is no error.
    func remove(_ path: String)
    /// `open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)`, to `fsync` a directory.
    func openDirectory(_ path: String) throws(Errno) -> FileDescriptor
    /// The content of a file, read to its end or until it is longer than `limit` bytes (the caller
    /// then refuses it); `nil` when there is no such file.
    func contents(of path: String, atMost limit: Int) throws(Errno) -> [UInt8]?
    /// The names in a directory (none if it cannot be read).
    func entries(of directory: String) -> [String]
}

/// The real calls, on swift-system's `FileDescriptor` where it has them.
public struct LocalFiles: FileOperations {
    public init() {}

    public func makeDirectory(_ path: String, permissions: FilePermissions) throws(Errno) {
        if case .failure(let error) = Syscall.retryingInterrupts({ mkdir(path, permissions.rawValue) }), error != .fileExists {
            throw error
        }
    }

    public func makeTemporaryFile(template: String) throws(Errno) -> (FileDescriptor, String) {
        var name = Array(template.utf8CString)
        let fd = try Syscall.retryingInterrupts { name.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) } }.get()
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)  // mkostemp is not in Glibc's module
        return (FileDescriptor(rawValue: fd), String(decoding: name.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    public func write(_ bytes: [UInt8], to file: FileDescriptor) throws(Errno) {
        do {
            _ = try file.writeAll(bytes)  // retries EINTR itself
        } catch {
            throw error as? Errno ?? .ioError
        }
    }

    public func synchronize(_ file: FileDescriptor) throws(Errno) {
        _ = try Syscall.retryingInterrupts { fsync(file.rawValue) }.get()
    }

    public func close(_ file: FileDescriptor) {
        try? file.close()
    }

    public func rename(_ source: String, to destination: String) throws(Errno) {
        _ = try Syscall.retryingInterrupts { Glibc.rename(source, destination) }.get()
    }

    public func remove(_ path: String) {
        _ = unlink(path)
    }

    public func openDirectory(_ path: String) throws(Errno) -> FileDescriptor {
        do {
            return try FileDescriptor.open(path, .readOnly, options: [.directory, .closeOnExec])
        } catch {
            throw error as? Errno ?? .ioError
        }
    }

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

    public func entries(of directory: String) -> [String] {
        Syscall.directoryEntries(directory)
    }
}
