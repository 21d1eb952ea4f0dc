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
    /// `run()`, the environment handed over as read under `environmentLock` (the launch then reads
    /// the process's own no more).
    public func runWithSteadyEnvironment() throws {
        if environment == nil { environment = steadyEnvironment() }
        try run()
    }
}
