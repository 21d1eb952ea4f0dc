import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A daemon's IIO event descriptors on one umockdev device node, played by the test: umockdev cannot
/// hand a descriptor over (rotation-and-posture.md), so the daemon inherits `count` FIFOs, numbered
/// from `firstDescriptor` (`fifos`, for `DaemonProcess(inheriting:)`), and the Nth
/// `IIO_GET_EVENT_FD_IOCTL` is answered with the Nth, as the kernel makes a new descriptor at each
/// (`iio_event_getfd`); past the last, `EBUSY`. The test writes `struct iio_event_data` records into
/// every one the daemon still reads.
public final class IIOEventFeed: @unchecked Sendable {
    // @unchecked: the writers change only at `openWriters`/`closeWriters`, from the test's thread.
    /// `_IOR('i', 0x90, int)` (include/uapi/linux/iio/events.h).
    public static let getEventDescriptor: UInt = 0x8004_6990
    /// The first descriptor number handed out.
    public static let firstDescriptor: Int32 = 50

    /// The FIFOs by descriptor number, for the daemon to inherit.
    public let fifos: [Int32: String]
    private let handler: IoctlHandler
    private let answered = Answered()
    private var writers: [Int32] = []
    private final class Answered: Sendable { let count = Atomic<Int32>(0) }

    /// `count` FIFOs in `directory`, and the ioctls on `node` answered from now on.
    public init(testbed: Testbed, node: String = "/dev/iio:device0", directory: String, count: Int32 = 8) throws {
        var fifos: [Int32: String] = [:]
        for index in 0..<count {
            let path = directory + "/events\(index)"
            guard mkfifo(path, 0o600) == 0 else { throw TestbedError("mkfifo \(path): errno \(errno)") }
            fifos[Self.firstDescriptor + index] = path
        }
        self.fifos = fifos
        let answered = answered
        handler = try testbed.handleIoctls(on: node) { request in
            guard request == Self.getEventDescriptor else { return .failure(ENOTTY) }
            let index = answered.count.add(1, ordering: .relaxed).oldValue
            return index < count ? .integer(Self.firstDescriptor + index) : .failure(EBUSY)
        }
    }

    deinit { closeWriters() }

    /// Opens the FIFOs' writing ends, once the daemon holds them (for reading and writing: these
    /// opens do not wait), and counts the ioctls afresh (a daemon started again asks from the first).
    public func openWriters() throws {
        closeWriters()
        answered.count.store(0, ordering: .relaxed)
        writers = try fifos.values.map { path in
            let writer = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            guard writer >= 0 else { throw TestbedError("open \(path): errno \(errno)") }
            return writer
        }
    }

    /// Closes the writing ends (the daemon stopped).
    public func closeWriters() {
        writers.forEach { close($0) }
        writers = []
    }

    /// Pushes the record of `code` into every descriptor the daemon still reads (those it closed
    /// refuse it: EPIPE); returns how many took it.
    @discardableResult
    public func push(_ code: UInt64, at timestamp: Int64 = 1_700_000_000_000_000_000) -> Int {
        let record = withUnsafeBytes(of: code, Array.init) + withUnsafeBytes(of: timestamp, Array.init)
        return writers.filter { write($0, record, record.count) == record.count }.count
    }
}
