import MotionSystem
import Testing

@testable import MotionDevices

/// Every transition of a capture's lifecycle, worked from its rules (CapturePolicy's figures), with no
/// device: whether the device exists is given, and counted where the rule must not ask.
@Suite struct CaptureLifecycleTests {
    static let device = "iio:device3"
    static let glitch = DeviceError.attributeUnreadable(device: device, attribute: "in_accel_x_raw", errno: ErrnoValue.invalidArgument)
    static let timeout = DeviceError.bufferFailed(device: device, operation: "refill", errno: ErrnoValue.timedOut)
    static let vanished = DeviceError.deviceVanished(device: device)

    func lifecycle(_ mode: CaptureMode, rate: Double = 100) -> CaptureLifecycle {
        CaptureLifecycle(device: Self.device, policy: CapturePolicy(rate: rate), startingIn: mode)
    }

    @Test func aBufferThatOpensIsReadBuffered() {
        var capture = lifecycle(.buffered)
        #expect(capture.phase == .opening(.buffered))
        capture.opened()
        #expect(capture.phase == .buffered)
    }

    @Test func aBufferThatCannotOpenIsPolledInsteadUnlessTheDeviceIsGone() {
        var capture = lifecycle(.buffered)
        #expect(capture.openFailed(Self.glitch, deviceExists: true) == .fallBackToPolling(Self.glitch))
        #expect(capture.phase == .opening(.polled))
        capture.opened()
        #expect(capture.phase == .polled)

        var gone = lifecycle(.buffered)
        #expect(gone.openFailed(Self.glitch, deviceExists: false) == .end(Self.vanished))
        #expect(gone.phase == .ended)
    }

    @Test func aDeviceThatCannotBePolledEndsTheCapture() {
        var failing = lifecycle(.polled)
        #expect(failing.openFailed(Self.glitch, deviceExists: true) == .end(Self.glitch))
        var gone = lifecycle(.polled)
        #expect(gone.openFailed(Self.glitch, deviceExists: false) == .end(Self.vanished))
        #expect(failing.phase == .ended && gone.phase == .ended)
    }

    /// A refill that times out before the first scan is a buffer that gives nothing; after it, a
    /// paused sensor, waited for.
    @Test func aBufferSilentFromTheStartIsPolledAndOnePausedLaterIsWaitedFor() {
        var silent = lifecycle(.buffered)
        silent.opened()
        #expect(silent.readFailed(Self.timeout, deviceExists: true) == .fallBackToPolling(Self.timeout))
        #expect(silent.phase == .opening(.polled))

        var paused = lifecycle(.buffered)
        paused.opened()
        paused.readSucceeded()
        for _ in 0..<(2 * CapturePolicy.failuresThatEnd) {
            #expect(paused.readFailed(Self.timeout, deviceExists: true) == .proceed)
        }
        #expect(paused.phase == .buffered)
    }

    /// `failuresThatEnd` (10) failed reads in a row end the capture; the nine before are told; one
    /// good read starts the count again. The same in both modes.
    @Test(arguments: [CaptureMode.buffered, .polled])
    func tenFailedReadsInARowEndTheCaptureAndAGoodOneResetsTheCount(mode: CaptureMode) {
        var capture = lifecycle(mode)
        capture.opened()
        for _ in 1..<CapturePolicy.failuresThatEnd { #expect(capture.readFailed(Self.glitch, deviceExists: true) == .report(Self.glitch)) }
        capture.readSucceeded()
        for _ in 1..<CapturePolicy.failuresThatEnd { #expect(capture.readFailed(Self.glitch, deviceExists: true) == .report(Self.glitch)) }
        #expect(capture.readFailed(Self.glitch, deviceExists: true) == .end(Self.glitch))
        #expect(capture.phase == .ended)
    }

    @Test(arguments: [CaptureMode.buffered, .polled])
    func aFailedReadOfAVanishedDeviceEndsTheCaptureAtOnce(mode: CaptureMode) {
        var capture = lifecycle(mode)
        capture.opened()
        #expect(capture.readFailed(Self.glitch, deviceExists: false) == .end(Self.vanished))
    }

    /// The buffer's check: no first scan by `firstDataTimeout` → polled; scans since the last check →
    /// nothing asked of the device; silent since, present → go on; silent since, gone → ended.
    @Test func theBuffersCheckFallsBackWithoutAFirstScanAndEndsWhenSilentAndGone() {
        let firstScan = DeviceError.bufferFailed(device: Self.device, operation: "first scan", errno: ErrnoValue.timedOut)
        var empty = lifecycle(.buffered)
        empty.opened()
        #expect(empty.checkDue(deviceExists: true) == .fallBackToPolling(firstScan))

        var capture = lifecycle(.buffered)
        capture.opened()
        capture.readSucceeded()
        var asked = 0
        func exists(_ answer: Bool) -> Bool {
            asked += 1
            return answer
        }
        #expect(capture.checkDue(deviceExists: exists(false)) == .proceed)
        #expect(asked == 0, "scans came since the last check: the device is not asked")
        #expect(capture.checkDue(deviceExists: exists(true)) == .proceed)
        #expect(asked == 1)
        #expect(capture.checkDue(deviceExists: exists(false)) == .end(Self.vanished))
    }

    /// A polled device's presence is asked every `readsPerPresenceCheck` reads (10 at 100 Hz: ten a
    /// second), and only then.
    @Test func aPolledDevicesPresenceIsAskedTenTimesASecond() {
        var capture = lifecycle(.polled, rate: 100)
        capture.opened()
        var asked = 0
        func exists(_ answer: Bool) -> Bool {
            asked += 1
            return answer
        }
        for _ in 1..<10 { #expect(capture.pollDue(deviceExists: exists(false)) == .proceed) }
        #expect(asked == 0)
        #expect(capture.pollDue(deviceExists: exists(true)) == .proceed)
        for _ in 1..<10 { #expect(capture.pollDue(deviceExists: exists(false)) == .proceed) }
        #expect(asked == 1)
        #expect(capture.pollDue(deviceExists: exists(false)) == .end(Self.vanished))
        #expect(asked == 2)
    }

    /// A reading that ends by itself (its descriptor closed) ends the capture, as vanished when the
    /// device is gone; in either mode.
    @Test(arguments: [CaptureMode.buffered, .polled])
    func aReadingThatEndsByItselfEndsTheCapture(mode: CaptureMode) {
        var present = lifecycle(mode)
        present.opened()
        #expect(present.readingEnded(Self.glitch, deviceExists: true) == .end(Self.glitch))
        var gone = lifecycle(mode)
        gone.opened()
        #expect(gone.readingEnded(Self.glitch, deviceExists: false) == .end(Self.vanished))
        #expect(gone.readingEnded(Self.glitch, deviceExists: false) == .proceed, "told once")
    }

    /// Once ended or stopped, nothing that happens makes the capture do anything more.
    @Test func anEndedCaptureDoesNothingMore() {
        var capture = lifecycle(.buffered)
        capture.opened()
        capture.stop()
        #expect(capture.phase == .ended)
        #expect(capture.readFailed(Self.glitch, deviceExists: false) == .proceed)
        #expect(capture.checkDue(deviceExists: false) == .proceed)
        #expect(capture.pollDue(deviceExists: false) == .proceed)
        #expect(capture.openFailed(Self.glitch, deviceExists: false) == .proceed)
        capture.opened()
        #expect(capture.phase == .ended)
    }

    /// Rules of one mode ask nothing in the other: a polled capture has no buffer check, a buffered
    /// one no presence count.
    @Test func eachModesChecksAreItsOwn() {
        var polled = lifecycle(.polled)
        polled.opened()
        #expect(polled.checkDue(deviceExists: false) == .proceed)
        #expect(polled.readFailed(Self.timeout, deviceExists: true) == .report(Self.timeout))
        var buffered = lifecycle(.buffered, rate: 10)
        buffered.opened()
        #expect(buffered.pollDue(deviceExists: false) == .proceed)
    }
}
