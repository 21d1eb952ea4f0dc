#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A descriptor with one owner, closed when its owner goes (`deinit`): never copied, so never closed
/// twice, and never closed by hand. Every `Syscall` that makes a descriptor returns one. `rawValue`
/// lends it to a call; `take()` hands it on to a new owner that closes it its own way (NIO's channel),
/// and then it is not closed here.
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
}

/// Descriptors with one owner, opened one by one (a sensor's channel files) and closed together when
/// it goes; `rawValues` lends them, in the order added.
public final class OwnedDescriptors {
    /// The descriptors, lent.
    public private(set) var rawValues: [Int32] = []

    public init() {}

    /// Owns `descriptor` from now on.
    public func append(_ descriptor: consuming OwnedDescriptor) { rawValues.append(descriptor.take()) }

    deinit { for descriptor in rawValues { _ = close(descriptor) } }
}
