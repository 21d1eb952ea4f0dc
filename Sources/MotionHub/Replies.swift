import MotionCore
import MotionDevices
import MotionFusion
import MotionWire

/// The replies that describe the daemon: DEVICES (what there is), STATUS (what runs) and HISTORY
/// (what was counted).
enum Replies {
    /// HISTORY: `query` answered from `history` at `now` (ns of Unix time), a step `stepLength` m; a
    /// `from` before the week kept is answered as from its start, a `to` after `now` as to `now`
    /// (what was counted before the clock was set back, stamped after `now`, is answered as at `now`).
    static func history(_ query: Request.History, of history: GaitHistory, stepLength: Double, now: Int64) -> HistoryReply {
        let nowSeconds = Double(now) * 1e-9
        let to = min(query.to ?? nowSeconds, nowSeconds)
        let from = max(query.from, nowSeconds - Request.History.kept)
        var reply = HistoryReply(id: query.id, stream: query.stream, from: from, to: max(from, to))
        if query.stream == .pedometer {
            let steps = history.steps(from: reply.from, to: reply.to, now: now)
            reply.steps = steps
            reply.distance = Double(steps) * stepLength
        } else {
            let (activities, truncated) = history.activities(from: reply.from, to: reply.to, now: now)
            reply.activities = activities
            reply.truncated = truncated ? true : nil
        }
        return reply
    }

    static func devices(id: RequestID?, devices: [DeviceDescriptor], source: any SensorSource) -> DevicesReply {
        DevicesReply(id: id, devices: devices.map { device in
            let rates: [Double]? = switch device.availableRates {
            case .list(let list): list
            case .range(let low, _, let high): [low, high]
            case nil: nil
            }
            return DevicesReply.Device(
                device: device.number.sysname, name: device.name, kinds: device.kinds, mode: source.readingMode(of: device).rawValue,
                rates: rates, mountMatrix: device.sensors.first?.mountMatrix.rowMajor ?? Matrix3.identity.rowMajor,
                mountMatrixSource: device.sensors.first?.mountMatrixSource ?? "identity",
                frameMatrix: device.sensors.first { $0.kind.isVector }?.deviceFrameMatrix.rowMajor,
                mountMatrixCorrection: device.sensors.first?.mountMatrixCorrection, label: device.label,
                location: device.location.rawValue,
                channels: Dictionary(uniqueKeysWithValues: device.sensors.map { ($0.kind.rawValue, $0.channels.map(\.valueAttribute)) }))
        })
    }

    /// STATUS: `uptime` in seconds; `fusion` the running fusion (its calibration as it is now),
    /// else `saved`, the calibration kept.
    static func status(
        id: RequestID?, uptime: Double, clients: Int, captures: some Collection<CaptureManager.Running>, dropped: Int,
        fusion: SensorFusion?, saved: SensorFusion.Calibration?, unavailable: StatusReply.Unavailable?,
        gyroscopeAxes: AxesVerdict? = nil, magnetometerAxes: AxesVerdict? = nil,
        geomagnetic: StatusReply.Geomagnetic? = nil
    ) -> StatusReply {
        let sensors = captures.sorted { $0.plan.device < $1.plan.device }.map { running in
            let rest = running.capture.restMode
            return StatusReply.Sensor(
                device: running.plan.device.sysname, kinds: running.plan.kinds.sorted { $0.rawValue < $1.rawValue },
                mode: running.capture.readingMode.rawValue, rate: running.capture.rate, measuredRate: running.measuredRate,
                rest: rest?.mode.rawValue, restNote: running.capture.readingNote.map { "\($0)" })
        }
        var calibration = fusion.map { f in
            StatusReply.Calibration(
                gyroscopeBias: f.filter.gyroscopeBias, gyroscopeScale: f.filter.gyroscopeScale,
                gyroscopeBiasUncertainty: f.usesGyroscope ? f.filter.gyroscopeBiasSigma : nil, magnetometerOffset: f.calibrator.offset,
                magneticFieldAccuracy: f.calibrator.accuracy)
        }
        if calibration == nil, let saved {
            calibration = StatusReply.Calibration(
                gyroscopeBias: saved.gyroscopeBias, gyroscopeScale: saved.gyroscopeScale, gyroscopeBiasUncertainty: saved.gyroscopeBiasSigma,
                magnetometerOffset: saved.magnetometerOffset,
                magneticFieldAccuracy: saved.magnetometerOffsetError == nil ? .uncalibrated : .low)
        }
        func axes(_ verdict: AxesVerdict?) -> StatusReply.GyroscopeAxes? {
            verdict.map { verdict in
                switch verdict {
                case .agree: StatusReply.GyroscopeAxes(agree: true, mendingMatrix: nil)
                case .disagree(let mending): StatusReply.GyroscopeAxes(agree: false, mendingMatrix: mending.rowMajor)
                }
            }
        }
        return StatusReply(
            id: id, uptime: uptime, clients: clients, sensors: sensors, dropped: dropped, calibration: calibration,
            unavailable: unavailable, gyroscopeAxes: axes(gyroscopeAxes), magnetometerAxes: axes(magnetometerAxes), geomagnetic: geomagnetic)
    }
}

extension StatusReply.Geomagnetic {
    /// STATUS's account of the model's `field` at the place `source` gave; `applied`: whether its
    /// declination is the one in use.
    init(_ field: GeomagneticField, applied: Bool, source: Source) {
        let zone: String = switch field.compassZone {
        case .normal: "normal"
        case .caution: "caution"
        case .blackout: "blackout"
        }
        self.init(
            model: WorldMagneticModel.wmm2025.name, declination: field.declination, inclination: field.inclination,
            field: field.totalIntensityInMicrotesla, valid: field.isWithinValidity, zone: zone, applied: applied, source: source)
    }
}
