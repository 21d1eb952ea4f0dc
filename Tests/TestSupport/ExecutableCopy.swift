import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Copies the executable at `source` to `destination` (a new file, mode 0755) so that it can be run
/// at once. `FileManager.copyItem` writes through a descriptor without `O_CLOEXEC`: a child that
/// another test spawned meanwhile inherited it (a long-lived motiond, or a shell that became one,
/// keeps it for good), and running the copy then failed with ETXTBSY, "Text file busy" (full-suite
/// run of issue 61; golang/go#22315 is the same race). Here the descriptor is `O_CLOEXEC`, and the
/// copy is written under `environmentLock`, which every test's launch holds from fork to exec
/// (`runWithSteadyEnvironment`), so no child of theirs is between the two while it is open. A launch
/// outside the lock (swift-subprocess's) may still hold it in that window of microseconds: running
/// the copy goes through `retryingBusyText`.
public func copyExecutable(from source: String, to destination: String) throws {
    // Read before the lock is taken, so that the lock is held only while the copy is written.
    let bytes = try Data(contentsOf: URL(fileURLWithPath: source))
    try environmentLock.withLock {
        let output = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
        guard output >= 0 else { throw TestbedError("creating \(destination): \(String(cString: strerror(errno)))") }
        defer { close(output) }
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { write(output, $0.baseAddress, $0.count) }
            guard n > 0 else { throw TestbedError("writing \(destination): \(String(cString: strerror(errno)))") }
            written += n
        }
    }
    // Written back before it runs: dirty page-cache pages cannot be given back, and
    // `ResidentMemoryAtRest` measures the pages the daemon gives back of its copy (it failed alone
    // with 12,884 of 13,656 kB kept). Through a read-only descriptor, which makes nothing busy,
    // outside the lock: under the full suite's load, launches waiting on the write-back went late.
    let reader = open(destination, O_RDONLY | O_CLOEXEC)
    guard reader >= 0 else { throw TestbedError("opening \(destination) to write it back: \(String(cString: strerror(errno)))") }
    defer { close(reader) }
    guard fdatasync(reader) == 0 else { throw TestbedError("writing \(destination) back: \(String(cString: strerror(errno)))") }
}

/// Runs `start` (which runs a copied executable, `copyExecutable`) again while it fails with ETXTBSY,
/// at most `attempts` times, 10 ms apart: a child spawned outside `environmentLock` holds the copy's
/// descriptor only between its fork and its exec. Any other failure, or the last, is thrown.
public func retryingBusyText<T>(attempts: Int = 20, _ start: () throws -> T) throws -> T {
    for _ in 1..<attempts {
        do { return try start() } catch where isBusyText(error) { usleep(10_000) }
    }
    return try start()
}

/// Whether `error` is ETXTBSY: Foundation's launch failure (an NSError whose underlying error is
/// POSIX 26), or a failure whose text quotes it (a program that exec'd the copy and said why it could not).
private func isBusyText(_ error: any Error) -> Bool {
    let nsError = error as NSError
    if nsError.domain == NSPOSIXErrorDomain, nsError.code == Int(ETXTBSY) { return true }
    if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain, underlying.code == Int(ETXTBSY) {
        return true
    }
    return "\(error)".contains(String(cString: strerror(ETXTBSY)))
}
