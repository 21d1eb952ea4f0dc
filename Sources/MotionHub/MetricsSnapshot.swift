import MotionCore
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
    /// Steps counted since start.
    package var steps: Int
    /// The activity reported last (`nil` while no stream runs the step detector).
    package var activity: MotionActivityKind?
    /// The last altitude reading (`nil` while no pressure sensor runs).
    package var altitude: AltitudeMessage?
    /// The MQTT bridge's, if there is one.
    package var mqtt: BridgeCounters?
    /// The DSU server's, if there is one.
    package var dsu: DSUCounters?
}

/// What the DSU server did, for metrics.
package struct DSUCounters: Sendable {
    /// Client addresses holding a lease now.
    package var clients = 0
    /// Datagrams received.
    package var datagrams = 0
    /// Datagrams dropped unanswered, by reason (`too_short`, `bad_crc`, `too_many_clients`…).
    package var dropped: [String: Int] = [:]
    /// Pad-data packets sent, one per client per sample.
    package var packetsSent = 0
    /// Packets motiond did not send, by reason: `over_budget` (more clients than a sample's send
    /// budget), `send_buffer_full` (its own socket's buffer), `send_error` (the kernel refused the
    /// destination: a firewall's `EPERM`, an unreachable network). A receiver's full buffer drops
    /// in the receiver's kernel, unseen.
    package var packetsDropped: [String: Int] = [:]

    package init() {}
}

/// What a bridge to another system (the MQTT broker) did, for metrics.
package struct BridgeCounters: Sendable {
    package var connected = false
    /// Messages handed to the other side.
    package var published = 0
    /// Messages lost: pushed out of the full queue, or in flight when a connection died.
    package var dropped = 0
    /// Connections the other side accepted.
    package var connections = 0

    package init(connected: Bool = false, published: Int = 0, dropped: Int = 0, connections: Int = 0) {
        (self.connected, self.published, self.dropped, self.connections) = (connected, published, dropped, connections)
    }
}
