import MotionCore

/// How often to poll an accelerometer that serves only event streams (orientation, tilt): slowly
/// while it lies still, fast from the first reading that moved until it has been still a while.
///
/// A real turn of a screen takes a few hundred milliseconds: a slow poll catches its start (or, if
/// it falls wholly between two, its end), and the fast one its end. At rest a polled accelerometer
/// then costs `restRate` wake-ups a second, fewer than iio-sensor-proxy's 700 ms timer
/// (rotation-and-posture.md), instead of the event rate's 4.
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
    /// Whether the last readings moved (polling at `movingRate`).
    public private(set) var isMoving = false
    private var last: Vector3?
    /// When the readings last moved, ns.
    private var lastMoved: Int64 = 0

    /// Polling at rest until a reading moves, then at `movingRate` Hz.
    public init(movingRate: Double) {
        self.movingRate = movingRate
    }

    /// The rate to poll at now, Hz.
    public var rate: Double { isMoving ? movingRate : restRate }

    /// Takes a reading (specific force, m/s²) made at `t` ns.
    public mutating func update(_ reading: Vector3, at t: Int64) {
        defer { last = reading }
        let moved = last.map { ($0 - reading).length > threshold } ?? false
        if moved { lastMoved = t }
        isMoving = moved || (isMoving && Double(t - lastMoved) * 1e-9 < settle)
    }
}
