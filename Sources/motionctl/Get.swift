import ArgumentParser
import MotionClientCore

/// `motionctl get`: one snapshot.
struct Get: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the latest values once (starting the sensors if they are not running).")

    @OptionGroup var connection: ConnectionOptions

    @Argument(help: "The streams: motion, accelerometer, gyroscope, magnetometer, proximity, orientation.")
    var streams: [StreamKind] = [.motion]

    @Option(help: "The attitude's reference frame.")
    var frame: AttitudeReferenceFrame = .xArbitraryZVertical

    @Flag(help: "Print the SNAPSHOT as JSON.")
    var json = false

    func run() throws {
        let snapshot = try reportingErrors { try connection.client.snapshot(of: streams, frame: frame) }
        if json {
            print(protocolLine(snapshot))
            return
        }
        var view = MotionView()
        view.take(snapshot)
        print(view.render().joined(separator: "\n"))
    }
}
