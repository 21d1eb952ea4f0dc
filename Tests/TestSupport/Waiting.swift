import Foundation

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
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
