import ArgumentParser
import MotionClientCore

/// `motionctl devices`: the sensors motiond has.
struct Devices: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the sensors (kinds, channels, rates, mount matrices, capture mode) and what the machine cannot give.")

    @OptionGroup var connection: ConnectionOptions

    @Flag(help: "Print the DEVICES reply as JSON.")
    var json = false

    func run() throws {
        let devices = try reportingErrors { try connection.client.devices() }
        if json {
            print(protocolLine(DevicesReply(id: nil, devices: devices)))
            return
        }
        if devices.isEmpty { print("no motion sensors") }
        defer {
            let status = try? connection.client.status()
            for line in Status.describe(status?.unavailable) { print(line) }
        }
        for device in devices {
            print("\(device.device)  \(device.name)  [\(device.mode)]")
            print("  kinds: \(device.kinds.map(\.rawValue).joined(separator: ", "))")
            if let rates = device.rates { print("  rates: \(rates.map { "\($0.formatted(digits: 3))" }.joined(separator: ", ")) Hz") }
            print("  mount matrix (\(device.mountMatrixSource)): \(matrix(device.mountMatrix))")
            if let correction = device.mountMatrixCorrection { print("    corrected: \(correction)") }
            if let frame = device.frameMatrix { print("  applied, into motiond's device frame: \(matrix(frame))") }
            if let label = device.label { print("  label: \(label)") }
            if let location = device.location { print("  location: \(location)") }
            for (kind, channels) in device.channels.sorted(by: { $0.key < $1.key }) where !channels.isEmpty {
                print("  \(kind) channels: \(channels.joined(separator: " "))")
            }
        }
    }
}

/// `[a b c; d e f; g h i]` for nine numbers in row order.
private func matrix(_ values: [Double]) -> String {
    let m = values.map { $0.formatted(digits: 3) }
    guard m.count == 9 else { return "\(values)" }
    return "[\(m[0..<3].joined(separator: " ")); \(m[3..<6].joined(separator: " ")); \(m[6..<9].joined(separator: " "))]"
}

extension Double {
    /// At most `digits` decimals, trailing zeros dropped.
    func formatted(digits: Int) -> String {
        var text = fixed(digits)
        while text.contains("."), text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text == "-0" ? "0" : text
    }
}
