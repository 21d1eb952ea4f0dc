import ArgumentParser
import MotionCore
import MotionDevices

/// Lists the IIO motion devices as the device layer sees them and reads each sensor.
@main
struct MotionProbe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "motion-probe",
        abstract: "List the IIO motion sensors (libudev + libiio) and read them, without the daemon.")

    @Option(help: "Samples to read from each sensor.")
    var count = 3

    @Option(help: "Rate to read at, Hz (rounded up to what the device offers).")
    var rate = 10.0

    func run() async throws {
        let listing = try DeviceDiscovery().listDevices()
        for problem in listing.problems { print("skipped: \(problem)") }
        guard !listing.devices.isEmpty else {
            print("no IIO motion devices found")
            return
        }
        for device in listing.devices {
            print(describe(device))
            for kind in device.kinds { try await read(kind, of: device) }
        }
    }

    func describe(_ device: DeviceDescriptor) -> String {
        var lines = ["\(device.number) \(device.name) (\(device.captureMode) capture)"]
        if let rates = device.availableRates { lines.append("  rates: \(rates)") }
        if let trigger = device.trigger { lines.append("  trigger: \(trigger)") }
        for sensor in device.sensors {
            lines.append("  \(sensor.kind): \(sensor.channels.map(\.valueAttribute).joined(separator: " "))")
            lines.append("    mount matrix \(sensor.mountMatrix.rowMajor) from \(sensor.mountMatrixSource)")
            if let near = sensor.nearLevel { lines.append("    near level \(near)") }
        }
        for problem in device.problems { lines.append("  note: \(problem)") }
        return lines.joined(separator: "\n")
    }

    func read(_ kind: SensorKind, of device: DeviceDescriptor) async throws {
        let capture = try SensorCapture(device: device, kinds: [kind], rate: rate)
        defer { capture.stop() }  // waits until the device's attributes are put back
        var seen = 0
        for await event in capture.events() {
            switch event {
            case .sample(let s):
                let v = s.vector
                let near = kind == .proximity ? (s.isNear ? " near" : " far") : ""
                print("    t=\((Double(s.timestamp) / 1e9).fixed(3)) s  \(kind.rawValue) (\(v.x.fixed(6)), \(v.y.fixed(6)), \(v.z.fixed(6)))\(near)")
                seen += 1
            case .captureModeChanged(let mode, let reason):
                print("    now \(mode): \(reason)")
            case .restModeChanged(let mode, let reason):
                print("    at rest: \(mode.rawValue)\(reason.map { " (\($0))" } ?? "")")
            case .readFailed(let error):
                print("    read failed: \(error)")
            case .rearming(let reason, let attempt, let delay):
                print("    re-armed (\(reason.rawValue), attempt \(attempt)): opened again in \(delay) s")
            case .readComplete:
                continue
            case .ended(let error):
                print("    ended: \(error)")
                return
            }
            if seen >= count { break }
        }
    }
}
