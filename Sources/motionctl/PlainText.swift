import MotionSystem

// What motionctl took from Foundation's internationalization and NSString, written for the text it
// handles (paths, hwdb and YAML lines, stream names), so that it links FoundationEssentials alone and
// no ICU (issue 63).

/// Writes `text` to standard error at once, unbuffered, as `FileHandle.standardError` did.
func writeStandardError(_ text: String) { _ = Syscall.write(2, Array(text.utf8)) }

/// Writes `text` to standard output at once, unbuffered, as `FileHandle.standardOutput` did.
func writeStandardOutput(_ text: String) { _ = Syscall.write(1, Array(text.utf8)) }

extension StringProtocol {
    /// Without the characters at either end for which `isTrimmed` holds: by default white space,
    /// line ends included (Unicode's White_Space, what `CharacterSet.whitespacesAndNewlines` held).
    func trimmed(_ isTrimmed: (Character) -> Bool = \.isWhitespace) -> String {
        guard let first = firstIndex(where: { !isTrimmed($0) }), let last = lastIndex(where: { !isTrimmed($0) }) else { return "" }
        return String(self[first...last])
    }

    /// Cut or padded with spaces at the end to `length` characters (NSString's `padding(toLength:)`).
    func padded(to length: Int) -> String {
        count >= length ? String(prefix(length)) : String(self) + String(repeating: " ", count: length - count)
    }
}

/// The last part of `path` ("hwdb.d" of "/etc/udev/hwdb.d"), as NSString's `lastPathComponent`.
func lastPathComponent(of path: String) -> String {
    String(path.split(separator: "/").last ?? "")
}

/// `path` without its last part ("/etc/udev" of "/etc/udev/hwdb.d", "/" of "/etc", "" of "name"), as
/// NSString's `deletingLastPathComponent`.
func deletingLastPathComponent(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "" }
    return slash == path.startIndex ? "/" : String(path[..<slash])
}
