import Foundation

/// The process's environment is one for all the tests, and glibc's `setenv` may move it while
/// another thread reads it: a testbed sets `$UMOCKDEV_DIR` (`umockdev_testbed_new`) while a test of
/// another suite starts a program, whose launch copies the environment (a CI run crashed in
/// `Process.run`'s memcpy). Whoever changes it, and whoever reads it to start a program, holds this lock.
public let environmentLock = NSLock()

/// The environment now, read under `environmentLock`.
public func steadyEnvironment() -> [String: String] {
    environmentLock.withLock { ProcessInfo.processInfo.environment }
}

extension Process {
    /// `run()` under `environmentLock`, the environment handed over as read there: a launch that only
    /// read it under the lock still crashed in `Process.run`'s memcpy in a CI run of a later stop, so
    /// the whole launch (a few ms) now waits for whoever changes the environment, and for the others.
    public func runWithSteadyEnvironment() throws {
        try environmentLock.withLock {
            if environment == nil { environment = ProcessInfo.processInfo.environment }
            try run()
        }
    }
}
