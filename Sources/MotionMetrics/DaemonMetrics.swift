import CoreMetrics
import MotionHub
import MotionCore
import MotionDevices
import MotionWire
import Prometheus

/// The hub's metrics in Prometheus's text format, through swift-metrics on the daemon's registry
/// (not the process-wide `MetricsSystem`: the tests run several daemons in one process), which the
/// front ends (MQTT, DSU) report to themselves, as things happen.
///
/// Nothing of the hub's is counted on the sample path: each scrape takes a `MetricsSnapshot` of the
/// totals the hub keeps anyway, and moves each counter on by what it grew since the last scrape.
final class DaemonMetrics {
    private let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    private var counters: [String: (counter: CoreMetrics.Counter, value: Int)] = [:]
    private var gauges: [String: CoreMetrics.Gauge] = [:]
    /// The series of devices and clients seen, to zero or remove those gone.
    private var devicesSeen: Set<String> = []
    private var clientsSeen: Set<Int> = []

    /// The hub's metrics on `registry`, with the front ends' there already.
    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        factory = PrometheusMetricsFactory(registry: registry)
    }

    /// The metrics as of `snapshot` (and the front ends' as they are), in Prometheus's text exposition format.
    func exposition(of snapshot: MetricsSnapshot) -> [UInt8] {
        gauge("motiond_uptime_seconds", snapshot.uptime)
        gauge("motiond_clients", Double(snapshot.clients))
        for kind in SensorKind.allCases {
            count("motiond_samples_read_total", ("sensor", kind.rawValue), total: snapshot.samplesRead[kind] ?? 0)
        }
        let running = Dictionary(snapshot.sensors.map { ($0.device, $0) }, uniquingKeysWith: { first, _ in first })
        devicesSeen.formUnion(running.keys)
        // A sensor closed samples at 0 Hz and rests in no way.
        for device in devicesSeen {
            gauge("motiond_sensor_rate_hertz", running[device]?.rate ?? 0, ("device", device))
            gauge("motiond_sensor_measured_rate_hertz", running[device]?.measuredRate ?? 0, ("device", device))
            // One series per way of resting, 1 for the one the device rests in (all 0: it does not rest, or closed).
            for mode in RestMode.allCases {
                gauge("motiond_sensor_rest_mode", running[device]?.rest == mode ? 1 : 0, ("device", device), ("mode", mode.rawValue))
            }
        }
        count("motiond_dropped_samples_total", total: snapshot.dropped)
        for (client, dropped) in snapshot.droppedByClient {
            count("motiond_client_dropped_samples_total", ("client", "\(client)"), total: dropped)
        }
        for gone in clientsSeen.subtracting(snapshot.droppedByClient.keys) {
            counters.removeValue(forKey: Self.key("motiond_client_dropped_samples_total", [("client", "\(gone)")]))?.counter.destroy()
        }
        clientsSeen = Set(snapshot.droppedByClient.keys)
        gauge("motiond_fusion_running", snapshot.magneticFieldAccuracy == nil ? 0 : 1)
        // CoreMotion's CMMagneticFieldCalibrationAccuracy: −1 uncalibrated, 0 low, 1 medium, 2 high.
        let accuracy: Double = switch snapshot.magneticFieldAccuracy {
        case .low: 0
        case .medium: 1
        case .high: 2
        case .uncalibrated, nil: -1
        }
        gauge("motiond_magnetic_field_accuracy", accuracy)
        if let sigma = snapshot.gyroscopeBiasUncertainty {
            gauge("motiond_gyroscope_bias_uncertainty_radians_per_second", sigma)
            gauge("motiond_gyroscope_calibrated", sigma <= StatusReply.Calibration.calibratedUncertainty ? 1 : 0)
        }
        if let bias = snapshot.gyroscopeBias {
            for (axis, value) in [("x", bias.x), ("y", bias.y), ("z", bias.z)] {
                gauge("motiond_gyroscope_bias_radians_per_second", value, ("axis", axis))
            }
        }
        for (kind, total) in snapshot.errors { count("motiond_errors_total", ("kind", kind.rawValue), total: total) }
        for recovery in snapshot.recoveries {
            count("motiond_sensor_recoveries_total", ("device", recovery.device), ("reason", recovery.reason), total: recovery.count)
        }
        count("motiond_sleeps_total", total: snapshot.sleeps)
        count("motiond_steps_total", total: snapshot.steps)
        // One series per activity, 1 for the one reported (all 0 while nothing runs for it).
        for kind in MotionActivityKind.allCases {
            gauge("motiond_activity", snapshot.activity == kind ? 1 : 0, ("activity", kind.rawValue))
        }
        if let altitude = snapshot.altitude {
            gauge("motiond_pressure_kilopascals", altitude.pressure)
            gauge("motiond_altitude_meters", altitude.altitude)
        }
        return registry.emitToBuffer()
    }

    private static func key(_ name: String, _ labels: [(String, String)]) -> String {
        labels.isEmpty ? name : "\(name){\(labels.map { "\($0.0)=\($0.1)" }.joined(separator: ","))}"
    }

    private func gauge(_ name: String, _ value: Double, _ labels: (String, String)...) {
        let key = Self.key(name, labels)
        let gauge = gauges[key] ?? CoreMetrics.Gauge(label: name, dimensions: labels, factory: factory)
        gauges[key] = gauge
        gauge.record(value)
    }

    /// Moves a counter on to `total`.
    private func count(_ name: String, _ labels: (String, String)..., total: Int) {
        let key = Self.key(name, labels)
        let entry = counters[key] ?? (CoreMetrics.Counter(label: name, dimensions: labels, factory: factory), 0)
        if total > entry.value { entry.counter.increment(by: total - entry.value) }
        counters[key] = (entry.counter, max(total, entry.value))
    }
}
