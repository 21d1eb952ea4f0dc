import Testing

@testable import MotionDevices

/// The rules both captures follow (the loop's and the thread's), worked by hand from their statements.
@Suite struct CapturePolicyTests {
    @Test(arguments: [
        // rate Hz, batch, remote → seconds: max(1 s, or 2 s remote; ten periods) + one batch's time.
        (100.0, 1, false, 1.01),  // 10 periods = 0.1 s < 1 s; a batch of 1 takes 10 ms
        (4.0, 1, false, 2.75),  // 10 periods = 2.5 s; + 0.25 s
        (100.0, 10, false, 1.1),  // a latency of 0.1 s: 10 scans per read
        (1000.0, 100, false, 1.1),
        (100.0, 1, true, 2.01),  // another machine's: at least 2 s
        (2.0, 1, true, 5.5),  // 10 periods = 5 s beat 2 s
    ])
    func theFirstScanIsAwaitedTenPeriodsOrASecondPlusABatch(rate: Double, batch: Int, remote: Bool, seconds: Double) {
        #expect(abs(CapturePolicy(rate: rate, batch: batch, remote: remote).firstDataTimeout - seconds) < 1e-9)
    }

    @Test func anOwnersTimeoutReplacesTheRule() {
        #expect(CapturePolicy(rate: 100, firstDataTimeout: 30).firstDataTimeout == 30)
    }

    @Test func aBufferIsCheckedEveryTwoSecondsOrItsFirstDataTimeoutIfLonger() {
        #expect(CapturePolicy(rate: 100).checkInterval == 2)
        #expect(CapturePolicy(rate: 2).checkInterval == 5.5)
    }

    @Test(arguments: [(1000.0, 100), (200.0, 20), (100.0, 10), (10.0, 1), (4.0, 1), (0.5, 1)])
    func aPolledDeviceIsLookedForAboutTenTimesASecondAtMostOncePerRead(rate: Double, reads: Int) {
        #expect(CapturePolicy(rate: rate).readsPerPresenceCheck == reads)
    }

    @Test func aBatchIsAtLeastOneScan() {
        #expect(CapturePolicy(rate: 100, batch: 0).batch == 1)
    }
}
