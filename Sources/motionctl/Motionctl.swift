import ArgumentParser
import Dispatch
import MotionWire

#if canImport(Glibc)
import Glibc
#endif

/// motionctl: the command line of motiond. A library's command, run by `Sources/MotionctlMain` and by
/// `motiond` when it is called by the name `motionctl` (the package's link to it: one Swift runtime).
public struct Motionctl: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "motionctl",
        abstract: "Look at and work with motion sensors through motiond.",
        version: Release.version,
        subcommands: [Watch.self, Get.self, Devices.self, Status.self, Calibrate.self, Record.self, Fuse.self, Steps.self, Activity.self, Gestures.self, View.self])

    public init() {}

    /// Runs motionctl from a synchronous `main` (motiond's) and exits with its status: what an async
    /// `@main` does, the command's task on the main actor, whose queue `dispatchMain` drains.
    public static func mainFromSynchronousContext() -> Never {
        Task { @MainActor in
            await main()
            Glibc.exit(0)
        }
        dispatchMain()
    }
}
