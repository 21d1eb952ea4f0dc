import MotionCore

/// How a capture that serves only event streams learns that its accelerometer moved.
public enum RestMode: String, Sendable, Hashable, CaseIterable {
    /// The chip's motion events wake it (`MotionEvents`); at rest it reads once a heartbeat.
    case motionEvents = "motion-events"
    /// An HID sensor hub reports only changes beyond its hysteresis, and was seen to (`HysteresisTrial`).
    case hysteresis
    /// It polls slowly at rest and fast while moving (`AdaptivePolling`).
    case adaptivePolling = "adaptive-polling"
}

/// How often to poll an accelerometer that serves only event streams (orientation, tilt): slowly
/// while it lies still, fast from the first reading that moved until it has been still a while.
/// Where the chip's own motion events wake the capture (`MotionEvents`), it is read at rest only
/// once a `heartbeat`, and fast from the event on.
///
/// A real turn of a screen takes a few hundred milliseconds: a slow poll catches its start (or, if
/// it falls wholly between two, its end), and the fast one its end. At rest a polled accelerometer
/// then costs `restRate` wake-ups a second, fewer than iio-sensor-proxy's 700 ms timer
/// (rotation-and-posture.md), instead of the event rate's 4; one woken by its events costs one
/// wake-up a `heartbeat`.
public struct AdaptivePolling: Sendable, Equatable {
    /// Polls a second while still, Hz.
    public var restRate = 1.25
    /// Polls a second while moving, Hz: the rate the streams asked for.
    public var movingRate: Double
    /// The change between two readings that counts as moving, m/s²: 0.1 g, a tilt of about 6°, above
    /// a hand's tremor and a polled chip's noise (a few mg), far below a quarter turn's 1 g.
    public var threshold = 0.1 * Units.standardGravity
    /// How long the readings must stay within `threshold` of each other before polling slows, s.
    public var settle = 1.5
    /// Seconds between reads at rest while motion events wake the capture: a device whose events
    /// never come is found out at the first heartbeat after it moved (`unannouncedChange`).
    public var heartbeat: Double
    /// The default `heartbeat`: one wake-up in 30 s costs nothing, and a device whose events do not
    /// work is polled from its first move plus at most half a minute.
    public static let heartbeat = 30.0
    /// Whether the last readings moved (polling at `movingRate`).
    public private(set) var isMoving = false
    /// Whether the chip's motion events wake the capture (then it reads at rest once a `heartbeat`).
    public private(set) var wakesOnEvents = false
    /// A change between two readings (m/s²) that no event announced, while none has come since the
    /// events were enabled: the events do not work, and the owner should poll instead (nil: none).
    /// Once one event came, a move without one is only a move too slow for the chip's threshold.
    public private(set) var unannouncedChange: Double?
    private var eventsSeen = false
    private var last: Vector3?
    /// When the readings last moved, or an event said so, ns.
    private var lastMoved: Int64 = 0
    /// When the last reading was made, ns (nil: none yet).
    private var lastRead: Int64?

    /// Polling at rest until a reading moves, then at `movingRate` Hz; `heartbeat` seconds between
    /// reads at rest while motion events wake the capture.
    public init(movingRate: Double, heartbeat: Double = Self.heartbeat) {
        self.movingRate = movingRate
        self.heartbeat = heartbeat
    }

    /// The rate to poll at now, Hz.
    public var rate: Double { isMoving ? movingRate : wakesOnEvents ? 1 / heartbeat : restRate }

    /// The period of `rate`, ns, for a timer (saturated: a heartbeat of any length sets one).
    public var period: Int64 { Int64(saturating: 1e9 / rate) }

    /// From now, the chip's motion events wake the capture (`on`), or they are given up. The next
    /// reading is the one later moves are measured from: a move before the events were armed was
    /// no event's to announce.
    public mutating func wakeOnEvents(_ on: Bool) {
        wakesOnEvents = on
        (eventsSeen, unannouncedChange, last) = (false, nil, nil)
    }

    /// The chip reported motion at `t` ns: reads go at `movingRate` until still for `settle`. Returns
    /// whether to read now: only where no read is due sooner, that is while resting, and a moving
    /// period after the last read (else the owner sets its timer to `period` from now), or while
    /// moving with no read for two moving periods (the timer missed a whole tick: one that could
    /// not be set to the moving rate keeps the heartbeat's). A chip sends an event per sample while
    /// it moves (a bma250e 15.6 to 125 a second): reading at each would add that many reads to the
    /// moving rate's.
    public mutating func motionReported(at t: Int64) -> Bool {
        let wasMoving = isMoving
        (eventsSeen, isMoving, lastMoved) = (true, true, t)
        guard let lastRead else { return true }
        return Double(t &- lastRead) >= (wasMoving ? 2 : 1) * 1e9 / movingRate
    }

    /// Takes a reading (specific force, m/s²) made at `t` ns.
    public mutating func update(_ reading: Vector3, at t: Int64) {
        defer { (last, lastRead) = (reading, t) }
        let change = last.map { ($0 - reading).length } ?? 0
        let moved = change > threshold
        if moved, wakesOnEvents, !eventsSeen, !isMoving { unannouncedChange = change }
        if moved { lastMoved = t }
        isMoving = moved || (isMoving && Double(t - lastMoved) * 1e-9 < settle)
    }
}
