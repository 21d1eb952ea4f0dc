/// The rules every capture follows, whether a thread of its own drives it (`SensorCapture`) or the
/// hub's event loop does (`LoopCapture`, `PolledSensors`): one formula each, so that the two cannot
/// drift apart.
public struct CapturePolicy: Sendable, Equatable {
    /// The rate the device runs at (the one asked for, rounded up to what it offers), Hz.
    public let rate: Double
    /// Scans per read of a buffer (its watermark).
    public let batch: Int
    /// Whether the device is another machine's, its scans crossing a network.
    public let remote: Bool
    /// Seconds a buffer may go without its first scan before the capture falls back to polling: ten
    /// sample periods, at least 1 s (2 s for another machine's: the scan crosses a network) and at
    /// most `firstDataMargin`, plus the time a batch takes to fill; or what the owner set.
    public let firstDataTimeout: Double

    /// The most a buffer's first scan is waited for beyond the time its batch takes to fill, s: ten
    /// periods of a slow chip are minutes (103 s at `PlausibleRate.hertz`'s 0.097 Hz), in which a
    /// silent buffer would deliver nothing.
    public static let firstDataMargin = 10.0

    /// Failed reads in a row that re-arm a capture (a read that fails now and then does not).
    public static let failuresThatEnd = 10
    /// The re-arm at which a sensor's driver is unbound and bound again where that is allowed: after
    /// three re-arms (at 0, 1 and 2 s) that did not wake it.
    public static let rebindAttempt = 4
    /// Seconds between checks that a buffer which gave scans still does (a removed device's buffer
    /// need not fail a read: it may only fall silent). Sparse: each check can be a wake-up of its own.
    public static let silenceCheck = 2.0
    /// How often a polled device's presence is checked, per second (some drivers keep answering
    /// reads of a removed device's open files).
    public static let presenceChecksPerSecond = 10.0

    /// - Parameters:
    ///   - rate: the device's real rate, Hz (brought into `PlausibleRate.hertz`).
    ///   - batch: scans per read of its buffer (default 1).
    ///   - remote: whether it is another machine's (default false).
    ///   - firstDataTimeout: seconds, instead of the rule's (default: the rule's).
    public init(rate: Double, batch: Int = 1, remote: Bool = false, firstDataTimeout: Double? = nil) {
        self.rate = PlausibleRate.clamped(rate)
        self.batch = max(1, batch)
        self.remote = remote
        self.firstDataTimeout = firstDataTimeout
            ?? max(remote ? 2.0 : 1.0, min(10 / self.rate, Self.firstDataMargin)) + Double(self.batch) / self.rate
    }

    /// Seconds from one check of a buffer's scans to the next, once it has given its first.
    public var checkInterval: Double { max(Self.silenceCheck, firstDataTimeout) }

    /// Good reads in a row after which a re-armed sensor counts as reading again (its back-off starts
    /// over): a check interval's worth, at least 2.
    public var readsThatHeal: Int { max(2, Int(saturating: rate * checkInterval / Double(batch))) }

    /// Reads between checks of a polled device's presence: about `presenceChecksPerSecond` a second,
    /// at most one per read.
    public var readsPerPresenceCheck: Int { max(1, Int(saturating: rate / Self.presenceChecksPerSecond)) }
}
