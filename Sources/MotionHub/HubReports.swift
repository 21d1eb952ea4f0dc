import MotionCore
import MotionWire
import NIOCore

/// What the hub reports of itself: STATUS (a client's request) and the metrics (a scrape), each
/// assembled from its parts on the loop, now.
extension Hub {
    /// Seconds since the hub started (monotonic clock).
    private var uptime: Double { Double((NIODeadline.now() - startTime).nanoseconds) / 1e9 }

    /// The STATUS reply to request `id`.
    func status(id: RequestID?) -> StatusReply {
        var reply = Replies.status(
            id: id, uptime: uptime, clients: clients.count, captures: captures.running.values, dropped: clients.totalDropped,
            fusion: pipeline.fusion.fusion, saved: saver.calibration.value, unavailable: unavailable,
            gyroscopeAxes: pipeline.fusion.axes.gyroscope, magnetometerAxes: pipeline.fusion.axes.magnetometer,
            geomagnetic: pipeline.fusion.place.field.map {
                .init($0, applied: location.settings.declination == nil, source: location.settings.location != nil ? .configuration : .geoclue)
            })
        reply.recoveries = recoveries.status
        reply.sleeps = recoveries.sleeps > 0 ? recoveries.sleeps : nil
        (reply.pedometer, reply.activity) = counting
        return reply
    }

    /// What the metrics report, now.
    package func metrics() -> MetricsSnapshot {
        eventLoop.preconditionInEventLoop()
        var errors = errorCounts
        errors[DaemonError.clientDisconnected.index] = clients.disconnectedByForce
        return MetricsSnapshot(
            uptime: uptime,
            clients: clients.count,
            samplesRead: Dictionary(uniqueKeysWithValues: zip(SensorKind.allCases, captures.samplesRead)),
            sensors: captures.running.values.map {
                .init(device: $0.plan.device.sysname, rate: $0.capture.rate, measuredRate: $0.measuredRate, rest: $0.capture.restMode?.mode)
            },
            droppedByClient: Dictionary(uniqueKeysWithValues: clients.outboxes.map { ($0.key, $0.value.queue.totalDropped) }),
            dropped: clients.totalDropped,
            magneticFieldAccuracy: pipeline.fusion.fusion?.calibrator.accuracy,
            gyroscopeBias: pipeline.fusion.fusion?.filter.gyroscopeBias ?? saver.calibration.value?.gyroscopeBias,
            gyroscopeBiasUncertainty: pipeline.fusion.fusion.flatMap { $0.usesGyroscope ? $0.filter.gyroscopeBiasSigma : nil }
                ?? saver.calibration.value?.gyroscopeBiasSigma,
            errors: Dictionary(uniqueKeysWithValues: zip(DaemonError.allCases, errors)),
            recoveries: recoveries.status ?? [], sleeps: recoveries.sleeps,
            steps: pipeline.gait.pedometer.steps, activity: pipeline.gait.activity?.activity, altitude: pipeline.gait.altitude)
    }
}
