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

    static let ignored = DeviceError.hysteresisIgnored(device: device, before: 3, after: 3)
    static let noEvents = DeviceError.noMotionEvents(device: device)
    static let silentEvents = DeviceError.eventsSilent(device: device, change: 9.8)

    func lifecycle(_ mode: CaptureMode, rate: Double = 100) -> CaptureLifecycle {
        CaptureLifecycle(device: Self.device, policy: CapturePolicy(rate: rate), startingIn: mode)
    }

    /// An accelerometer that only event streams read, polled at 4 Hz, with a heartbeat of 30 s.
    func resting(_ mode: CaptureMode) -> CaptureLifecycle {
        CaptureLifecycle(
            device: Self.device, policy: CapturePolicy(rate: 4), startingIn: mode, restsWhenStill: true, heartbeat: 30)
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
    @Test func aBufferSilentFromTheStartIsPolledAndATimeoutLaterIsLeftToTheChecks() {
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

    /// `failuresThatEnd` (10) failed reads in a row, the device there, re-arm the capture (issue 62:
    /// before, they ended it, and its clients' streams with it); the nine before are told; one good
    /// read starts the count again. Re-armed, it opens again in the mode it started in. The same in
    /// both modes.
    @Test(arguments: [CaptureMode.buffered, .polled])
    func tenFailedReadsInARowReArmTheCaptureAndAGoodOneResetsTheCount(mode: CaptureMode) {
        var capture = lifecycle(mode)
        capture.opened()
        for _ in 1..<CapturePolicy.failuresThatEnd { #expect(capture.readFailed(Self.glitch, deviceExists: true) == .report(Self.glitch)) }
        capture.readSucceeded()
        for _ in 1..<CapturePolicy.failuresThatEnd { #expect(capture.readFailed(Self.glitch, deviceExists: true) == .report(Self.glitch)) }
        #expect(capture.readFailed(Self.glitch, deviceExists: true) == .rearm(.failingReads, attempt: 1, after: 0))
        #expect(capture.phase == .recovering(.failingReads) && !capture.isOver && !capture.isReading)
        #expect(capture.readFailed(Self.glitch, deviceExists: true) == .proceed, "a read in flight from the closed reader is no failure")
        #expect(capture.reopen() == mode)
        #expect(capture.phase == .opening(mode))
    }

    /// A sensor that stays dead is re-armed after 0, 1, 2, 4, 8, 16, 32 and then every 60 s: one
    /// opening a minute, never a busy loop; a read that works starts the schedule again.
    @Test func reArmsOfASensorThatStaysDeadBackOffToAMinute() {
        var capture = lifecycle(.polled)
        capture.opened()
        var delays: [Double] = []
        for _ in 1...9 {
            for _ in 1..<CapturePolicy.failuresThatEnd { _ = capture.readFailed(Self.glitch, deviceExists: true) }
            guard case .rearm(.failingReads, _, let delay) = capture.readFailed(Self.glitch, deviceExists: true) else {
                Issue.record("no re-arm: \(capture.phase)")
                return
            }
            delays.append(delay)
            _ = capture.reopen()
            capture.opened()
        }
        #expect(delays == [0, 1, 2, 4, 8, 16, 32, 60, 60])
        // One good read between failures is no recovery (issue 62's review: a sensor giving one read
        // per opening was re-armed at once for ever); a check interval's worth of them is.
        capture.readSucceeded()
        for _ in 1..<CapturePolicy.failuresThatEnd { _ = capture.readFailed(Self.glitch, deviceExists: true) }
        #expect(capture.readFailed(Self.glitch, deviceExists: true) == .rearm(.failingReads, attempt: 10, after: 60))
        _ = capture.reopen()
        capture.opened()
        for _ in 0..<capture.policy.readsThatHeal { capture.readSucceeded() }
        for _ in 1..<CapturePolicy.failuresThatEnd { _ = capture.readFailed(Self.glitch, deviceExists: true) }
        #expect(capture.readFailed(Self.glitch, deviceExists: true) == .rearm(.failingReads, attempt: 1, after: 0))
    }

    /// A re-armed device that cannot be opened again is re-armed after its back-off while it is there
    /// (a first open that fails still ends the capture: nothing ever read), and ends once it is gone;
    /// stopped while it waits, it is not opened again.
    @Test func aReArmedDeviceThatCannotBeOpenedIsReArmedAgainUntilItGoes() {
        var capture = lifecycle(.polled)
        capture.opened()
        for _ in 1..<CapturePolicy.failuresThatEnd { _ = capture.readFailed(Self.glitch, deviceExists: true) }
        _ = capture.readFailed(Self.glitch, deviceExists: true)
        _ = capture.reopen()
        #expect(capture.openFailed(Self.glitch, deviceExists: true) == .rearm(.failingReads, attempt: 2, after: 1))
        _ = capture.reopen()
        #expect(capture.openFailed(Self.glitch, deviceExists: false) == .end(Self.vanished))

        var stopped = lifecycle(.buffered)
        stopped.opened()
        stopped.readSucceeded()
        _ = stopped.checkDue(deviceExists: true)  // scans since the last check
        _ = stopped.checkDue(deviceExists: true)  // none: re-armed
        #expect(stopped.phase == .recovering(.silence))
        stopped.stop()
        #expect(stopped.reopen() == nil && stopped.isOver)
    }

    @Test(arguments: [CaptureMode.buffered, .polled])
    func aFailedReadOfAVanishedDeviceEndsTheCaptureAtOnce(mode: CaptureMode) {
        var capture = lifecycle(mode)
        capture.opened()
        #expect(capture.readFailed(Self.glitch, deviceExists: false) == .end(Self.vanished))
    }

    /// The buffer's check: no first scan by `firstDataTimeout` → polled; scans since the last check →
    /// nothing asked of the device; silent since, present → go on; silent since, gone → ended.
    @Test func theBuffersCheckFallsBackWithoutAFirstScanEndsWhenGoneAndReArmsWhenSilent() {
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
        #expect(capture.checkDue(deviceExists: exists(false)) == .end(Self.vanished))
        #expect(asked == 1)

        // Issue 62: silent for a check while its device is there (a driver that forgot its state
        // across a suspend), the buffer is re-armed at once; before, it was waited for until the
        // daemon restarted. Re-opened, it must give a first scan again, or it is polled.
        var stalled = lifecycle(.buffered)
        stalled.opened()
        stalled.readSucceeded()
        #expect(stalled.checkDue(deviceExists: true) == .proceed)
        #expect(stalled.checkDue(deviceExists: true) == .rearm(.silence, attempt: 1, after: 0))
        #expect(stalled.reopen() == .buffered)
        stalled.opened()
        #expect(stalled.checkDue(deviceExists: true) == .fallBackToPolling(firstScan))
    }

    /// A polled device's presence is asked every `readsPerPresenceCheck` reads (10 at 100 Hz: ten a
    /// second), and only then.
    @Test func aPolledDevicesPresenceIsAskedTenTimesASecond() {
        var capture = lifecycle(.polled, rate: 100)
        capture.opened()
        func due() -> Bool { capture.presenceCheckDue() }
        for _ in 1..<10 { #expect(!due()) }
        #expect(due())
        #expect(capture.presenceChecked(exists: true) == .proceed)
        for _ in 1..<10 { #expect(!due()) }
        #expect(due())
        #expect(capture.presenceChecked(exists: false) == .end(Self.vanished))
        #expect(!due(), "over: nothing more is asked")
    }

    /// The presence check is the caller's, between two calls, so that it runs outside the lock that
    /// holds the lifecycle (a remote device's is an iiod read of up to 2 s, and the loop takes that
    /// lock for STATUS): a capture stopped meanwhile ends once, by the stop, and a device found gone
    /// then says nothing more.
    @Test func aPresenceCheckMadeOutsideTheLifecycleIsToldAfter() {
        var capture = lifecycle(.polled, rate: 4)
        capture.opened()
        let due = capture.presenceCheckDue()
        #expect(due, "at 4 Hz every read asks")
        capture.stop()
        #expect(capture.presenceChecked(exists: false) == .proceed)
        #expect(capture.phase == .ended)
    }

    /// A reading that ends by itself (its descriptor closed) ends the capture, as vanished when the
    /// device is gone; in either mode.
    @Test(arguments: [CaptureMode.buffered, .polled])
    func aReadingThatEndsByItselfIsReArmedOrEndsIfTheDeviceWent(mode: CaptureMode) {
        // Issue 62's review: a local buffer whose read failed ended its capture (ENDED to its
        // watchers) though the device was there, where failing reads elsewhere re-arm it.
        var present = lifecycle(mode)
        present.opened()
        #expect(present.readingEnded(Self.glitch, deviceExists: true) == .rearm(.failingReads, attempt: 1, after: 0))
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
        let due = capture.presenceCheckDue()
        #expect(!due)
        #expect(capture.presenceChecked(exists: false) == .proceed)
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
        let due = buffered.presenceCheckDue()
        #expect(!due)
    }

    // MARK: Resting: an accelerometer that only event streams read

    /// An HID hub's buffer is read while its hysteresis is tried (no rest said yet); honoured, it rests
    /// so, read as a buffer still, and checked once a heartbeat instead of every `checkInterval`.
    @Test func aHubThatHonoursItsHysteresisRestsOnIt() {
        var capture = resting(.buffered)
        capture.opened()
        #expect(capture.phase == .resting(.hysteresisTrial))
        #expect(capture.restMode == nil && capture.mode == .buffered)
        #expect(capture.checkDelay == capture.policy.checkInterval)
        #expect(capture.hysteresisHonoured() == .rest(.hysteresis, reason: nil))
        #expect(capture.phase == .resting(.hysteresis) && capture.mode == .buffered)
        #expect(capture.restMode?.mode == .hysteresis && capture.restMode?.note == nil)
        #expect(capture.checkDelay == 30)
        #expect(capture.hysteresisHonoured() == .proceed, "said once")
        #expect(capture.hysteresisNotHonoured(because: Self.ignored) == .proceed, "a verdict once given stands")
    }

    /// A hub that ignores its hysteresis is polled instead; a hub has no motion events, so the rest
    /// that follows says the trial's reason, not "no motion events".
    @Test func aHubThatIgnoresItsHysteresisIsPolledSlowlyAndSaysWhy() {
        var capture = resting(.buffered)
        capture.opened()
        #expect(capture.hysteresisNotHonoured(because: Self.ignored) == .fallBackToPolling(Self.ignored))
        #expect(capture.phase == .opening(.polled) && capture.mode == .polled)
        capture.opened()
        #expect(capture.phase == .polled)
        #expect(capture.motionEventsRefused(Self.noEvents) == .rest(.adaptivePolling, reason: Self.ignored))
        #expect(capture.phase == .resting(.adaptivePolling(because: Self.ignored)))
        #expect(capture.restMode?.mode == .adaptivePolling && capture.restMode?.note == Self.ignored)
    }

    /// Events refused for a reason of their own (the `events/` files unwritable) say that reason,
    /// whatever came before; a device without any, polled from the start, says it has none.
    @Test func motionEventsRefusedSayWhy() {
        let unwritable = DeviceError.attributeUnwritable(device: Self.device, attribute: "events/in_accel_x_roc_either_en", errno: ErrnoValue.permissionDenied)
        var trial = resting(.buffered)
        trial.opened()
        _ = trial.hysteresisNotHonoured(because: Self.ignored)
        trial.opened()
        #expect(trial.motionEventsRefused(unwritable) == .rest(.adaptivePolling, reason: unwritable))

        var polled = resting(.polled)
        polled.opened()
        #expect(polled.motionEventsRefused(Self.noEvents) == .rest(.adaptivePolling, reason: Self.noEvents))
        #expect(polled.mode == .polled)
    }

    /// Motion events armed wake the polled capture; when they fail, or a move comes that none
    /// announced, they are given up for adaptive polling, once.
    @Test func motionEventsWakeTheCaptureUntilTheyFail() {
        var capture = resting(.polled)
        capture.opened()
        #expect(capture.restMode == nil, "nothing said before the events' outcome")
        #expect(capture.motionEventsArmed() == .rest(.motionEvents, reason: nil))
        #expect(capture.phase == .resting(.motionEvents) && capture.mode == .polled)
        #expect(capture.restMode?.mode == .motionEvents && capture.restMode?.note == nil)
        #expect(capture.motionEventsFailed(Self.silentEvents) == .rest(.adaptivePolling, reason: Self.silentEvents))
        #expect(capture.restMode?.mode == .adaptivePolling && capture.restMode?.note == Self.silentEvents)
        #expect(capture.motionEventsFailed(Self.silentEvents) == .proceed, "given up once")
        #expect(capture.motionEventsArmed() == .proceed, "never armed again")
    }

    /// A capture that does not rest, or is not polled, takes no rest: reports of events or trials change nothing.
    @Test func aCaptureThatDoesNotRestIgnoresRestReports() {
        var polled = lifecycle(.polled)
        polled.opened()
        #expect(polled.motionEventsArmed() == .proceed && polled.motionEventsRefused(Self.noEvents) == .proceed)
        #expect(polled.hysteresisHonoured() == .proceed && polled.hysteresisNotHonoured(because: Self.ignored) == .proceed)
        #expect(polled.phase == .polled && polled.restMode == nil)

        var buffered = resting(.buffered)
        #expect(buffered.motionEventsArmed() == .proceed, "a buffer being opened has no motion events")
        buffered.opened()
        #expect(buffered.motionEventsRefused(Self.noEvents) == .proceed)
        #expect(buffered.phase == .resting(.hysteresisTrial))
    }

    /// At rest the reading rules hold as before: a silent buffer whose device went ends; a polled
    /// one's presence is asked; failed reads count; once stopped, no rest is said.
    @Test func aRestingCaptureKeepsTheReadingRules() {
        var hub = resting(.buffered)
        hub.opened()
        hub.readSucceeded()
        _ = hub.hysteresisHonoured()
        #expect(hub.checkDue(deviceExists: true) == .proceed)
        #expect(hub.checkDue(deviceExists: false) == .end(Self.vanished))
        #expect(hub.isOver && hub.restMode == nil && hub.mode == .buffered)

        var woken = resting(.polled)
        woken.opened()
        _ = woken.motionEventsArmed()
        let due = woken.presenceCheckDue()
        #expect(due, "at 4 Hz every read asks")
        #expect(woken.presenceChecked(exists: false) == .end(Self.vanished))
        var failing = resting(.polled)
        failing.opened()
        _ = failing.motionEventsRefused(Self.noEvents)
        for _ in 1..<CapturePolicy.failuresThatEnd { #expect(failing.readFailed(Self.glitch, deviceExists: true) == .report(Self.glitch)) }
        #expect(failing.readFailed(Self.glitch, deviceExists: true) == .rearm(.failingReads, attempt: 1, after: 0))
        #expect(failing.motionEventsFailed(Self.silentEvents) == .proceed)
        #expect(failing.reopen() == .polled && failing.restMode == nil, "re-opened as at start: its rest is found again")
    }

    /// The mode is the phase's: what it opens in, reads in, and last read in once over.
    @Test func theModeFollowsFromThePhase() {
        var capture = lifecycle(.buffered)
        #expect(capture.mode == .buffered && !capture.readsBuffer)
        capture.opened()
        #expect(capture.readsBuffer)
        _ = capture.checkDue(deviceExists: true)
        #expect(capture.mode == .polled && !capture.readsBuffer)
        capture.opened()
        capture.stop()
        #expect(capture.isOver && capture.mode == .polled)
    }
}
