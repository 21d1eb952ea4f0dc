import MotionCore

/// The kinds of error the daemon counts (metrics' `motiond_errors_total{kind}`).
enum DaemonError: String, CaseIterable, Sendable {
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
    var index: Int { Self.allCases.firstIndex(of: self)! }
}

/// What the metrics report, taken from the hub on its loop at each scrape: totals since start, and
/// the state now.
struct MetricsSnapshot: Sendable {
    struct Sensor: Sendable {
        var device: String
        /// The rate set, Hz.
        var rate: Double
        /// Samples per second per kind, measured from the samples' timestamps.
        var measuredRate: Double?
    }

    /// Seconds since start (monotonic clock).
    var uptime: Double
    var clients: Int
    var samplesRead: [SensorKind: Int]
    /// The captures running now.
    var sensors: [Sensor]
    /// Stream messages dropped for each connected client (slow readers).
    var droppedByClient: [Int: Int]
    /// All dropped, gone clients included.
    var dropped: Int
    /// The fusion's magnetometer calibration, when it runs.
    var magneticFieldAccuracy: MagneticFieldAccuracy?
    /// The gyroscope bias estimated (running, else saved), rad/s.
    var gyroscopeBias: Vector3?
    var errors: [DaemonError: Int]
    /// The MQTT bridge's, if there is one.
    var mqtt: MQTTBridge.Counters?
}
