import Foundation
import TestSupport
import Testing

/// Foundation's `Process.run` crashes the test process when it holds about 1,360 descriptors
/// (`launchableDescriptors`): every launch of the tests' waits while it holds more than that bound.
@Suite(.onOwnThreads) struct LaunchDescriptorsTests {
    @Test func aLaunchWaitsWhileTheTestProcessHoldsTooManyDescriptors() throws {
        func launchTrue(seconds: Double) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/true")
            try process.runWithSteadyEnvironment(seconds: seconds)
            process.waitUntilExit()
        }
        // Opened under the lock, as a test that opens many does: no launch scans meanwhile. Copies of
        // standard error, not /dev/null: umockdev's preload opens a descriptor of its own at each open
        // of a /dev path, and keeps it past the close. 100 beyond the bound: the suites running beside
        // this one close descriptors of their own before the launch counts them (one just over the
        // bound was under it by then, in a full run).
        let held: [Int32] = environmentLock.withLock {
            (0...max(0, launchableDescriptors - openDescriptorCount() + 100)).map { _ in fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0) }
        }
        #expect(!held.contains(-1), "could not open \(held.count) descriptors")
        #expect(throws: TooManyDescriptors.self) { try launchTrue(seconds: 0.05) }
        for descriptor in held { close(descriptor) }
        try launchTrue(seconds: 60)
    }
}
