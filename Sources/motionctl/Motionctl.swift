import ArgumentParser
import MotionWire

/// motionctl: the command line of motiond.
@main
struct Motionctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "motionctl",
        abstract: "Look at and work with motion sensors through motiond.",
        version: Release.version,
        subcommands: [Watch.self, Get.self, Devices.self, Status.self, Calibrate.self, Record.self, Fuse.self, Steps.self, Activity.self, Gestures.self, View.self])
}
