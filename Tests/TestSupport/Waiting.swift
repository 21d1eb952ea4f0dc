import Foundation
import Testing

/// A condition a test waited for did not come true in time.
public struct ConditionNotMet: Error, CustomStringConvertible {
    public let seconds: Double
    public var description: String { "condition not met within \(seconds) s" }
}

/// Waits until `condition` holds, checking every millisecond; throws if it does not within `seconds`.
/// The condition decides the outcome, never the time: the bound is only how long a failure takes.
public func waitUntil(seconds: Double = 5, _ condition: () -> Bool) throws {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        guard Date() < deadline else { throw ConditionNotMet(seconds: seconds) }
        usleep(1000)
    }
}

/// A socket path of its own in the temporary directory, for one daemon of a test.
public func temporarySocketPath() -> String {
    NSTemporaryDirectory() + "motiond-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
}

/// Runs blocking `body` (sockets, child processes, seconds of waiting) on a thread of its own and
/// awaits its result, so that the test holds no thread of Swift's cooperative pool meanwhile: the pool
/// has one thread per core (two on CI), and suites running beside it need them (a time limit that is a
/// task, such as `runProgram`'s, fired 10 s late while synchronous tests held both).
public func onOwnThread<T>(_ body: () throws -> T) async throws -> T {
    try await withTaskExecutorPreference(ThreadPerJob.executor) { try body() }
}

/// A suite whose tests wait as they go (for a child process, a socket, a bus, a device), each run
/// on threads of its own (`onOwnThread`) rather than Swift's cooperative pool: a synchronous test's
/// blocking wait then holds none of the pool's threads (one per core), which the other suites, the
/// serialized `Hardware` suite above all, need. `#expect` works as anywhere: the test's task, and
/// what it knows of its test, are the same.
public struct OwnThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? { testCase == nil ? nil : self }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        try await withTaskExecutorPreference(ThreadPerJob.executor, operation: function)
    }
}

extension Trait where Self == OwnThreadsTrait {
    /// Runs each of the suite's tests on threads of their own (`OwnThreadsTrait`).
    public static var onOwnThreads: Self { OwnThreadsTrait() }
}

/// Runs each job (a part of a task between two waits) on a new thread: a job that blocks holds only
/// its own thread. Starting a thread costs tens of microseconds, nothing beside a test's waits.
private final class ThreadPerJob: TaskExecutor {
    static let executor = ThreadPerJob()

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        Thread { job.runSynchronously(on: ThreadPerJob.executor.asUnownedTaskExecutor()) }.start()
    }
}
