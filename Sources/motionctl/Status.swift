import ArgumentParser
import MotionClientCore

/// `motionctl status`: what motiond is doing.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show motiond's uptime, running sensors and their real rates, clients, drops, calibration, and what the machine cannot give and why.")

    @OptionGroup var connection: ConnectionOptions

    @Flag(help: "Print the STATUS reply as JSON.")
    var json = false

    func run() throws {
        let status = try reportingErrors { try connection.client.status() }
        if json {
            print(protocolLine(status))
            return
        }
        print("up \(status.uptime.formatted(digits: 0)) s, \(status.clients) client(s), \(status.dropped) message(s) dropped")
        if status.sensors.isEmpty { print("no sensor running (none is watched)") }
        for sensor in status.sensors {
            let measured = sensor.measuredRate.map { ", measured \($0.formatted(digits: 1)) Hz" } ?? ""
            // A chip's functions have an interval, not a rate (1 / 60 s is "0.0 Hz").
            let pace = sensor.kinds.allSatisfy(\.isChipFunction) && sensor.rate > 0
                ? "read every \((1 / sensor.rate).formatted(digits: 0)) s" : "at \(sensor.rate.formatted(digits: 1)) Hz\(measured)"
            print("\(sensor.device): \(sensor.kinds.map(\.rawValue).joined(separator: ", ")) [\(sensor.mode)] \(pace)")
            if let rest = sensor.rest { print("  at rest: woken by \(rest)\(sensor.restNote.map { " (\($0))" } ?? "")") }
            // A chip read at its interval only says why (protocol 1.11).
            if sensor.rest == nil, let note = sensor.restNote { print("  \(note)") }
        }
        if let pedometer = status.pedometer { print("steps counted by \(pedometer.device)'s \(pedometer.source)") }
        if let activity = status.activity { print("activity told by \(activity.device)'s \(activity.source)") }
        for line in Self.describe(status.unavailable) { print(line) }
        for line in Self.describe(status.recoveries, sleeps: status.sleeps) { print(line) }
        if let axes = status.gyroscopeAxes {
            print(axes.agree ? "gyroscope axes: agree with the accelerometer's"
                : "gyroscope axes: DISAGREE with the accelerometer's: multiply its readings by \(axes.mendingMatrix.map { $0.map { Int($0) } } ?? []) (the journal gives the mount matrix)")
        }
        if let c = status.calibration {
            let b = c.gyroscopeBias, o = c.magnetometerOffset
            print("gyroscope bias: (\(b.x.formatted(digits: 5)), \(b.y.formatted(digits: 5)), \(b.z.formatted(digits: 5))) rad/s")
            if let sigma = c.gyroscopeBiasUncertainty {
                let state = c.gyroscopeCalibrated == true ? "calibrated" : "learning (motionctl calibrate: hold the machine still)"
                print("gyroscope calibration: \(state), ±\((sigma * 180 / .pi).formatted(digits: 3)) °/s")
            }
            if let s = c.gyroscopeScale {
                let percent = s * 100
                print("gyroscope scale error: (\(percent.x.formatted(digits: 3)), \(percent.y.formatted(digits: 3)), \(percent.z.formatted(digits: 3))) %")
            }
            print("magnetometer offset: (\(o.x.formatted(digits: 2)), \(o.y.formatted(digits: 2)), \(o.z.formatted(digits: 2))) µT, accuracy \(c.magneticFieldAccuracy.rawValue)")
        }
    }

    /// The sleeps seen and the sensors re-armed, one line per sensor and reason.
    static func describe(_ recoveries: [StatusReply.Recovery]?, sleeps: Int?) -> [String] {
        (sleeps.map { ["the machine slept \($0) time(s); its sensors were re-armed at each resume"] } ?? [])
            + (recoveries ?? []).map { "re-armed: \($0.device) \($0.count) time(s) after \($0.reason)" }
    }

    /// What the machine cannot give, one line per stream or part of motion, with the reason.
    static func describe(_ unavailable: StatusReply.Unavailable?) -> [String] {
        guard let unavailable else { return [] }
        return unavailable.streams.sorted { $0.key < $1.key }.map { "unavailable: \($0.key): \($0.value)" }
            + unavailable.motion.reasons.map { "unavailable in motion: \($0)" }
    }
}
