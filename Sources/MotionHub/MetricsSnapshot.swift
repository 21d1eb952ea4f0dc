import MotionCore
import MotionDevices
import MotionWire

/// The kinds of error the daemon counts (metrics' `motiond_errors_total{kind}`).
package enum DaemonError: String, CaseIterable, Sendable {
    /// A sensor read failed (the capture goes on).
    case readFailed = "read_failed"
    /// A sensor's capture ended: its device went away or kept failing.
    case sensorEnded = "sensor_ended"
    /// Listing the devices failed.
    case discoveryFailed = "discovery_failed"
    /// A request was refused with `ERROR`.
    case requestRefused = "request_refused"
    /// A client was disconnected for being stuck or flooding.
    case clientDisconnected = "client_disconnected"

    /// The kind's place in `allCases`, for counting in an array.
    package var index: Int { Self.allCases.firstIndex(of: self)! }
}

/// What the metrics report, taken from the hub on its loop at each scrape: totals since start, and
/// the state now.
package struct MetricsSnapshot: Sendable {
    package struct Sensor: Sendable {
        package var device: String
        /// The rate set, Hz.
        package var rate: Double
        /// Samples per second per kind, measured from the samples' timestamps.
        package var measuredRate: Double?
        /// How it learns that it moved while it lies still (`nil`: it does not rest).
        package var rest: RestMode?
    }

    /// Seconds since start (monotonic clock).
    package var uptime: Double
    package var clients: Int
    package var samplesRead: [SensorKind: Int]
    /// The captures running now.
    package var sensors: [Sensor]
    /// Stream messages dropped for each connected client (slow readers).
    package var droppedByClient: [Int: Int]
    /// All dropped, gone clients included.
    package var dropped: Int
    /// The fusion's magnetometer calibration, when it runs.
    package var magneticFieldAccuracy: MagneticFieldAccuracy?
    /// The gyroscope bias estimated (running, else saved), rad/s.
    package var gyroscopeBias: Vector3?
    /// Its standard deviation, rad/s.
    package var gyroscopeBiasUncertainty: Double?
    package var errors: [DaemonError: Int]
    /// The sensors re-armed since start, by device and reason (`motiond_sensor_recoveries_total`).
    package var recoveries: [StatusReply.Recovery]
    /// The machine's sleeps seen since start.
    package var sleeps: Int
    /// Steps counted since start.
    package var steps: Int
    /// The activity reported last (`nil` while the step detector is not fed: no stream wants it and no
    /// history is kept, `MotionPipeline`).
    package var activity: MotionActivityKind?
    /// The last altitude reading (`nil` while no pressure sensor runs).
    package var altitude: AltitudeMessage?
}
