import MotionCore
import Synchronization
import Testing

@testable import MotionHub

/// A sleep seen without logind: CLOCK_BOOTTIME counts the time suspended and CLOCK_MONOTONIC does not
/// (clock_gettime(2): "CLOCK_BOOTTIME … also includes any time that the system is suspended"), so
/// their difference grows by each sleep. The clocks here are the test's.
@Suite struct SensorRecoveriesTests {
    @Test func aGrowthOfTheClocksDifferenceOverASecondIsASleepSeenOnce() {
        let apart = Mutex<Int64>(5_000_000_000)
        var recoveries = SensorRecoveries { apart.withLock { $0 } }
        var slept = recoveries.sleptUnannounced()
        #expect(!slept)
        apart.withLock { $0 += 900_000_000 }  // under a second: reading the two clocks apart, not a sleep
        slept = recoveries.sleptUnannounced()
        #expect(!slept)
        apart.withLock { $0 += 30_000_000_000 }  // a 30 s suspend
        slept = recoveries.sleptUnannounced()
        #expect(slept)
        slept = recoveries.sleptUnannounced()
        #expect(!slept, "seen once")
        #expect(recoveries.sleeps == 1)
        // A sleep logind announced is not found again by the clocks after its resume.
        recoveries.sleeping()
        apart.withLock { $0 += 60_000_000_000 }
        recoveries.woke()
        slept = recoveries.sleptUnannounced()
        #expect(!slept)
        #expect(recoveries.sleeps == 2)
    }

    @Test func theRecoveriesAreListedByDeviceThenReason() {
        var recoveries = SensorRecoveries { 0 }
        #expect(recoveries.status == nil)
        recoveries.count(.failingReads, of: DeviceNumber(1))
        recoveries.count(.silence, of: DeviceNumber(1))
        recoveries.count(.resume, of: DeviceNumber(0))
        recoveries.count(.silence, of: DeviceNumber(1))
        #expect(recoveries.status?.map { "\($0.device) \($0.reason) \($0.count)" } == [
            "iio:device0 resume 1", "iio:device1 silence 2", "iio:device1 failing-reads 1",
        ])
    }
}
