import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The process's environment is one for all the tests, and glibc's `setenv` may move it while
/// another thread reads it: a testbed sets `$UMOCKDEV_DIR` (`umockdev_testbed_new`) while a test of
/// another suite starts a program, whose launch copies the environment. Whoever changes it, and
/// whoever reads it to start a program, holds this lock; so does a test that opens many descriptors
/// at once (`launchableDescriptors`).
public let environmentLock = NSLock()

/// The environment now, read under `environmentLock`.
public func steadyEnvironment() -> [String: String] {
    environmentLock.withLock { ProcessInfo.processInfo.environment }
}

/// The most descriptors the test process may hold while Foundation starts a program. `Process.run`
/// finds the highest open one by reading /proc/self/fd and copying each entry's whole 256-byte name
/// field: at about 1,360 descriptors the entries (24 bytes each) fill glibc's 32 KB directory buffer,
/// and the copy of the last one reads past it. A full-suite run crashed so (SIGSEGV in `Process.run`'s
/// memcpy, reading the entry "1373" at a page's end) while DSUAttackTests held 1,024 sockets. A test
/// that opens hundreds of descriptors at once does so under `environmentLock`, so that the count a
/// launch read cannot grow before it scans.
public let launchableDescriptors = 1_200

/// The descriptors the test process holds now: /proc/self/fd's entries, counted without reading a name.
public func openDescriptorCount() -> Int {
    guard let directory = opendir("/proc/self/fd") else { return 0 }
    defer { closedir(directory) }
    var entries = 0
    while readdir(directory) != nil { entries += 1 }
    return entries - 3  // ".", "..", and the directory's own descriptor
}

/// A launch waited `seconds` for the test process to hold at most `launchableDescriptors`.
public struct TooManyDescriptors: Error, CustomStringConvertible {
    public let held: Int
    public let seconds: Double
    public var description: String {
        "the test process held \(held) descriptors for \(seconds) s; Foundation's Process.run crashes above about 1,360 (launchableDescriptors)"
    }
}

extension Process {
    /// `run()` under `environmentLock`, the environment handed over as read there, once the test
    /// process holds at most `launchableDescriptors` (waiting up to `seconds` for that).
    public func runWithSteadyEnvironment(seconds: Double = 60) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let launched = try environmentLock.withLock {
                let held = openDescriptorCount()
                guard held <= launchableDescriptors else {
                    if Date() < deadline { return false }
                    throw TooManyDescriptors(held: held, seconds: seconds)
                }
                if environment == nil { environment = ProcessInfo.processInfo.environment }
                try run()
                return true
            }
            if launched { return }
            usleep(10_000)
        }
    }
}
