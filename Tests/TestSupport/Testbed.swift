import CUMockdev
import Foundation
import Testing

/// A umockdev testbed: a fake `/sys` and `/dev` that libudev and libiio see through umockdev's
/// preload library. The tests must run under `umockdev-wrapper` (README's test command does that).
///
/// A testbed sets `$UMOCKDEV_DIR` for the whole process, so every test that makes one belongs to
/// the serialized `Hardware` suite.
public final class Testbed {
    private let pointer: UnsafeMutablePointer<UMockdevTestbed>

    public init() throws {
        guard ProcessInfo.processInfo.environment["LD_PRELOAD"]?.contains("umockdev") == true else {
            throw TestbedError("umockdev's preload library is not loaded: run the tests under umockdev-wrapper")
        }
        // It sets `$UMOCKDEV_DIR`, and unsets it when it goes (`SteadyEnvironment.swift`).
        pointer = environmentLock.withLock { umockdev_testbed_new() }
    }

    deinit { environmentLock.withLock { g_object_unref(pointer) } }

    /// The testbed's root: `root + "/sys/…"` is what the code under test sees as `/sys/…`.
    public var root: String { String(cString: umockdev_testbed_get_root_dir(pointer)) }

    /// Adds devices described in umockdev's record format (`P:`, `E:`, `A:`, `N:` lines); each
    /// device gets an `add` uevent.
    public func add(_ description: String) throws {
        var error: UnsafeMutablePointer<GError>? = nil
        if umockdev_testbed_add_from_string(pointer, description, &error) == 0 {
            let message = error.map { String(cString: $0.pointee.message) } ?? "unknown"
            g_clear_error(&error)
            throw TestbedError("umockdev_testbed_add_from_string: \(message)")
        }
    }

    /// Adds the devices of `Fixtures/<name>.umockdev`.
    public func add(fixture name: String) throws {
        try add(Self.fixture(name))
    }

    /// The text of `Fixtures/<name>.umockdev`: its devices, separated by empty lines.
    public static func fixture(_ name: String) throws -> String {
        guard let url = Bundle.module.url(forResource: name, withExtension: "umockdev", subdirectory: "Fixtures") else {
            throw TestbedError("no fixture \(name).umockdev")
        }
        return try String(contentsOf: url, encoding: .utf8)
    }

    /// Removes a device (its sysfs directory and node) and sends its `remove` uevent.
    public func remove(syspath: String) {
        umockdev_testbed_uevent(pointer, syspath, "remove")
        umockdev_testbed_remove_device(pointer, syspath)
    }

    /// The file descriptor of the controlling end of a device node, to script what the code reads.
    public func controlDescriptor(for node: String) -> Int32 {
        umockdev_testbed_get_dev_fd(pointer, node)
    }

    /// Writes bytes that the code under test will read from `node` (e.g. `/dev/iio:device0`).
    public func feed(_ node: String, _ bytes: [UInt8]) throws {
        let fd = controlDescriptor(for: node)
        guard fd >= 0 else { throw TestbedError("\(node) is not a scripted device node") }
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw TestbedError("short write to \(node)") }
    }

    /// Overwrites an attribute in place, as the kernel changes a value: a reader that keeps the file
    /// open sees the new value on its next read from offset 0.
    public func setAttribute(_ device: String, _ attribute: String, _ value: String) throws {
        let path = "\(root)/sys/bus/iio/devices/\(device)/\(attribute)"
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data(value.utf8))
        try handle.close()
    }

    /// Reads an attribute as the testbed holds it.
    public func attribute(_ device: String, _ attribute: String) throws -> String {
        try String(contentsOfFile: "\(root)/sys/bus/iio/devices/\(device)/\(attribute)", encoding: .utf8)
    }

    /// Waits until the code under test has read `attribute` of `device` twice from now (inotify's
    /// `IN_ACCESS` on the testbed's file, said as a read ends): the second read began after the first
    /// ended, so after the value there now was written. A polled sensor has seen that value then.
    public func waitForReads(of attribute: String, on device: String, seconds: Double = 5) throws {
        try countingReads(of: attribute, on: device) { _, drain in
            var reads = 0
            // Drained every millisecond: inotify merges an access into one not yet read, so reads are
            // counted short, never over.
            try waitUntil(seconds: seconds) {
                reads += drain()
                return reads >= 2
            }
        }
    }

    /// How many reads of `attribute` of `device` the code under test made in the next `seconds`,
    /// drained as each is said: only reads closer together than this thread wakes would merge.
    public func reads(of attribute: String, on device: String, during seconds: Double) throws -> Int {
        try countingReads(of: attribute, on: device) { watcher, drain in
            var reads = 0
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                var reader = pollfd(fd: watcher, events: Int16(POLLIN), revents: 0)
                if poll(&reader, 1, Int32(max(1, end.timeIntervalSinceNow * 1000))) > 0 { reads += drain() }
            }
            return reads
        }
    }

    /// Runs `body` with an inotify descriptor watching reads (`IN_ACCESS`) of `attribute` of `device`,
    /// and a function that returns the reads said since it last ran.
    private func countingReads<T>(of attribute: String, on device: String, _ body: (Int32, () -> Int) throws -> T) throws -> T {
        let watcher = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard watcher >= 0 else { throw TestbedError("inotify_init1: errno \(errno)") }
        defer { close(watcher) }
        guard inotify_add_watch(watcher, "\(root)/sys/bus/iio/devices/\(device)/\(attribute)", UInt32(IN_ACCESS)) >= 0 else {
            throw TestbedError("inotify_add_watch on \(device)/\(attribute): errno \(errno)")
        }
        var events = [UInt8](repeating: 0, count: 4096)
        return try body(watcher) {
            let count = read(watcher, &events, events.count)
            return count > 0 ? count / MemoryLayout<inotify_event>.size : 0
        }
    }

    /// Replaces an attribute file by a directory, so that reading it fails (EISDIR), as a read that
    /// fails in the driver does.
    public func breakAttribute(_ device: String, _ attribute: String) throws {
        let path = "\(root)/sys/bus/iio/devices/\(device)/\(attribute)"
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    }
}

public struct TestbedError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Every test that uses a testbed, in every test target, runs in here, one at a time:
/// `$UMOCKDEV_DIR` is process-wide and all test targets run in one process. One at a time, it is the
/// run's longest path, so its tests run on threads of their own: no other suite's blocking test can
/// keep it waiting for a thread of the cooperative pool.
@Suite(.serialized, .onOwnThreads) public enum Hardware {}

extension Testbed {
    /// One scan of the imu-buffered fixture: accelerometer and gyroscope (raw, `Int16` little-endian),
    /// 4 bytes of padding and the timestamp (ns): 24 bytes.
    /// One scan of the imu-buffered fixture with only its accelerometer enabled (as for streams that
    /// need nothing else): x, y, z as le:s16, 2 bytes of padding, the timestamp as le:s64 at offset 8.
    public static func accelerometerScan(_ counts: [Int], time: Int64) -> [UInt8] {
        var bytes: [UInt8] = []
        for v in counts { bytes += withUnsafeBytes(of: Int16(v).littleEndian, Array.init) }
        return bytes + [0, 0] + withUnsafeBytes(of: time.littleEndian, Array.init)
    }

    public static func imuScan(accelerometer: [Int], gyroscope: [Int], time: Int64) -> [UInt8] {
        var bytes: [UInt8] = []
        for v in accelerometer + gyroscope { bytes += withUnsafeBytes(of: Int16(v).littleEndian, Array.init) }
        return bytes + [0, 0, 0, 0] + withUnsafeBytes(of: time.littleEndian, Array.init)
    }
}

/// Answers the ioctls a program makes on one emulated device node, from the test: umockdev's
/// `IoctlBase` hands each to `answer` on the testbed's worker thread (rotation-and-posture.md, the
/// pattern of umockdev's own `test_custom_ioctl`). Kept alive by its owner; detached when it goes.
public final class IoctlHandler: @unchecked Sendable {
    // @unchecked: `answer` is immutable; `requests` is behind its lock.
    /// What to do with one request.
    public enum Answer: Sendable {
        /// Write this `int` where the argument points, and return 0 (an `_IOR(…, int)` request).
        case integer(Int32)
        /// Fail with this errno.
        case failure(Int32)
        /// Return 0, touching nothing (an `_IO` request, or one whose argument the test ignores).
        case success
    }

    private let base: UnsafeMutablePointer<UMockdevIoctlBase>
    private let answer: @Sendable (UInt) -> Answer
    private let lock = NSLock()
    private var seen: [UInt] = []
    private var written: [[UInt8]] = []

    init(answer: @escaping @Sendable (UInt) -> Answer) {
        self.answer = answer
        base = umockdev_ioctl_base_new()
        // One callback for both signals: umockdev gives a write no request number (0).
        let callback: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> gboolean = { _, client, context in
            guard let client, let context else { return 0 }
            let handler = Unmanaged<IoctlHandler>.fromOpaque(context).takeUnretainedValue()
            let typed = client.assumingMemoryBound(to: UMockdevIoctlClient.self)
            if umockdev_ioctl_client_get_request(typed) == 0 { handler.take(typed) } else { handler.handle(typed) }
            return 1
        }
        for signal in ["handle-ioctl", "handle-write"] {
            g_signal_connect_data(base, signal, unsafeBitCast(callback, to: GCallback.self), Unmanaged.passUnretained(self).toOpaque(), nil, GConnectFlags(0))
        }
    }

    /// What the program wrote to the node, one element per `write`.
    public var writes: [[UInt8]] { lock.withLock { written } }

    private var failingWrites: Int32?
    /// The errno each write fails with from now on, not kept in `writes` (nil: writes are taken).
    public var writeError: Int32? {
        get { lock.withLock { failingWrites } }
        set { lock.withLock { failingWrites = newValue } }
    }

    /// Keeps a write to the node whole, in order.
    private func take(_ client: UnsafeMutablePointer<UMockdevIoctlClient>) {
        if let code = writeError { return umockdev_ioctl_client_complete(client, -1, code) }
        guard let data = umockdev_ioctl_client_get_arg(client) else { return umockdev_ioctl_client_complete(client, -1, EFAULT) }
        let count = Int(data.pointee.data_len)
        let bytes = count > 0 && data.pointee.data != nil ? Array(UnsafeBufferPointer(start: data.pointee.data, count: count)) : []
        lock.withLock { written.append(bytes) }
        umockdev_ioctl_client_complete(client, count, 0)
    }

    deinit {
        // The testbed keeps its own reference to `base`: no call may reach a handler that is gone.
        g_signal_handlers_disconnect_matched(base, G_SIGNAL_MATCH_DATA, 0, 0, nil, nil, Unmanaged.passUnretained(self).toOpaque())
        g_object_unref(base)
    }

    /// The requests made so far, in order.
    public var requests: [UInt] { lock.withLock { seen } }

    fileprivate var pointer: UnsafeMutablePointer<UMockdevIoctlBase> { base }

    private func handle(_ client: UnsafeMutablePointer<UMockdevIoctlClient>) {
        let request = umockdev_ioctl_client_get_request(client)
        lock.withLock { seen.append(request) }
        switch answer(request) {
        case .failure(let code):
            umockdev_ioctl_client_complete(client, -1, code)
        case .success:
            umockdev_ioctl_client_complete(client, 0, 0)
        case .integer(let value):
            var error: UnsafeMutablePointer<GError>? = nil
            guard let target = umockdev_ioctl_data_resolve(umockdev_ioctl_client_get_arg(client), 0, 4, &error) else {
                g_clear_error(&error)
                return umockdev_ioctl_client_complete(client, -1, EFAULT)
            }
            var bytes = withUnsafeBytes(of: value, Array.init)
            umockdev_ioctl_data_update(target, 0, &bytes, Int32(bytes.count))
            umockdev_ioctl_client_complete(client, 0, 0)
            g_object_unref(target)
        }
    }
}

extension Testbed {
    /// Sends the program's ioctls on `node` (`/dev/iio:device0`) to `answer` from now on; the
    /// handler answers while it lives.
    public func handleIoctls(on node: String, answer: @escaping @Sendable (UInt) -> IoctlHandler.Answer) throws -> IoctlHandler {
        let handler = IoctlHandler(answer: answer)
        var error: UnsafeMutablePointer<GError>? = nil
        if umockdev_testbed_attach_ioctl(pointer, node, handler.pointer, &error) == 0 {
            let message = error.map { String(cString: $0.pointee.message) } ?? "unknown"
            g_clear_error(&error)
            throw TestbedError("umockdev_testbed_attach_ioctl \(node): \(message)")
        }
        return handler
    }
}
