import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Syscall {
    /// `fstat(descriptor)`'s device and inode: which file a descriptor is (systemd names the journal's
    /// stream so, in `$JOURNAL_STREAM`); nil if `fstat` fails.
    public static func identity(of descriptor: Int32) -> (device: UInt64, inode: UInt64)? {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return nil }
        return (UInt64(status.st_dev), UInt64(status.st_ino))
    }

    /// What is at a path, without following a symbolic link there (`lstat`).
    public enum FileKind: Sendable, Equatable {
        case socket, directory, regular, other
    }

    /// `lstat(path)`: the kind of what is at `path`; `nil` when nothing is.
    public static func kind(at path: String) -> Result<FileKind?, Errno> {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            let error = Errno(rawValue: errno)
            return error == .noSuchFileOrDirectory ? .success(nil) : .failure(error)
        }
        let kind: FileKind = switch status.st_mode & S_IFMT {
        case S_IFSOCK: .socket
        case S_IFDIR: .directory
        case S_IFREG: .regular
        default: .other
        }
        return .success(kind)
    }

    /// `chmod(path, mode)`: `mode` as `chmod(1)`'s octal number.
    public static func setMode(_ mode: UInt32, of path: String) -> Result<Void, Errno> {
        retryingInterrupts { chmod(path, mode) }.map { _ in () }
    }

    /// The id of the group named `name` (`getgrnam`), or `nil` if there is none.
    public static func groupID(named name: String) -> UInt32? {
        getgrnam(name).map { $0.pointee.gr_gid }
    }

    /// `chown(path, -1, group)`: the file's group, its owner unchanged.
    public static func setGroup(_ group: UInt32, of path: String) -> Result<Void, Errno> {
        retryingInterrupts { chown(path, uid_t.max, group) }.map { _ in () }
    }

    /// `unlink(path)`.
    public static func remove(_ path: String) -> Result<Void, Errno> {
        retryingInterrupts { unlink(path) }.map { _ in () }
    }
}

extension Syscall {
    /// The names in a directory (`opendir`/`readdir`), without `.` and `..`; none if it cannot be read.
    public static func directoryEntries(_ path: String) -> [String] {
        guard let stream = opendir(path) else { return [] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
