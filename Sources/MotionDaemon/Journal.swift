import CSDBus
import MotionSystem

#if canImport(Glibc)
import Glibc
#endif

/// systemd's journal, written to with its native protocol (libsystemd's `sd_journal_sendv`), so that
/// a log line's metadata become fields of its entry (`journalctl DEVICE=iio:device0`). Here, with the
/// log writer, not in `MotionSystem`: the client library, which links that, links no libsystemd.
public enum Journal {
    /// Whether `descriptor` is the stream systemd connected to the journal for this service: the
    /// device and inode `$JOURNAL_STREAM` names (systemd.exec(5)); then entries should go natively.
    public static func isJournalStream(_ descriptor: Int32) -> Bool {
        guard let value = getenv("JOURNAL_STREAM").map({ String(cString: $0) }) else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        guard let identity = Syscall.identity(of: descriptor) else { return false }
        return identity.device == device && identity.inode == inode
    }

    /// `sd_journal_sendv(3)`: one entry whose fields, each `NAME=value` (the value may hold
    /// newlines), are separated by NUL bytes in `entry`; one vector per field, into `entry` itself.
    public static func send(entry: [UInt8]) -> Result<Void, Errno> {
        entry.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return .success(()) }
            let vectors = raw.split(separator: 0).map { field in
                iovec(iov_base: UnsafeMutableRawPointer(mutating: base + field.startIndex), iov_len: field.count)
            }
            let result = sd_journal_sendv(vectors, Int32(vectors.count))
            return result < 0 ? .failure(Errno(rawValue: -result)) : .success(())
        }
    }
}
