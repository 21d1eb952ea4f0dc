#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A descriptor with one owner, closed when its owner goes (`deinit`): never copied, so never closed
/// twice, and never closed by hand. `rawValue` lends it to a call; `take()` hands it on to a new owner
/// that closes it its own way (NIO's channel, libiio), and then it is not closed here.
public struct OwnedDescriptor: ~Copyable, Sendable {
    /// The descriptor, lent: for calls, never to be closed.
    public let rawValue: Int32

    /// Owns `rawValue` from now on.
    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    deinit { _ = close(rawValue) }

    /// Hands the descriptor on, unclosed: the caller owns it now.
    public consuming func take() -> Int32 {
        let descriptor = rawValue
        discard self
        return descriptor
    }

    /// `open(path, O_RDONLY | O_CLOEXEC)` (`Syscall.openReadOnly`), owned.
    public init(openingForReading path: String) throws(Errno) {
        self.init(try Syscall.openReadOnly(path).get())
    }

    /// `open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)` (`Syscall.openWriteOnly`), owned.
    public init(openingForWriting path: String) throws(Errno) {
        self.init(try Syscall.openWriteOnly(path).get())
    }
}
