import ArgumentParser
import FoundationEssentials
import MotionClientCore
import MotionSystem

/// `motionctl view`: the live values in a browser (docs/view.md).
struct View: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the device turning in 3D, plots of its sensors, its events and the compass's calibration, live, in a browser.",
        discussion: """
            Serves one page on 127.0.0.1, at a random port, to whoever has the token in the URL it prints, \
            and opens it if a browser is there. It runs until Ctrl-C; the page follows motiond across its restarts.
            """)

    @OptionGroup var connection: ConnectionOptions

    @Option(help: "The attitude's reference frame: xArbitraryZVertical, xArbitraryCorrectedZVertical, xMagneticNorthZVertical, xTrueNorthZVertical.")
    var frame: AttitudeReferenceFrame = .xArbitraryZVertical

    @Option(help: "The page's directory (default: ../share/motiond/view beside motionctl, else /usr/share/motiond/view).")
    var assets: String?

    @Flag(help: "Only print the URL; do not open a browser.")
    var noOpen = false

    func run() async throws {
        guard let directory = assets ?? Self.assetDirectories().first(where: { FileManager.default.fileExists(atPath: $0 + "/index.html") }) else {
            writeStandardError("motionctl: the page's files are not installed (looked in \(Self.assetDirectories().joined(separator: ", ")))\n")
            throw ExitCode(ExitStatus.failure)
        }
        let feed = ViewFeed(socketPath: connection.client.socketPath, frame: frame)
        let server: ViewServer
        do {
            server = try ViewServer(assets: try ViewAssets(directory: directory), pages: feed.pages)
        } catch {
            writeStandardError("motionctl: cannot serve the page from \(directory): \(error)\n")
            throw ExitCode(ExitStatus.failure)
        }
        feed.start(publish: { server.publish($0) }, report: { server.report($0) }, forget: { server.forget() })
        writeStandardOutput("\(server.url)\n")
        if !noOpen { Self.open(server.url) }
        try await server.wait()
    }

    /// Where the page's files are looked for, in order: installed beside motionctl, by the package,
    /// then the source tree motionctl was built from (a developer's `swift run`).
    static func assetDirectories(sourceFile: String = #filePath) -> [String] {
        var directories: [String] = []
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            let bin = URL(fileURLWithPath: executable).deletingLastPathComponent()
            directories.append(bin.deletingLastPathComponent().appendingPathComponent("share/motiond/view").path)
        }
        directories.append("/usr/share/motiond/view")
        #if DEBUG
        // Only a developer's build: a release build's source directory may be anyone's to write.
        let repository = URL(fileURLWithPath: sourceFile).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        directories.append(repository.appendingPathComponent("share/view").path)
        #endif
        return directories
    }

    /// Opens `url` in the user's browser, if there is a display to show it on. Not with the URL in
    /// the browser's command line, which every local user can read (`ps`): through a page of the
    /// user's own (mode 0600, in `$XDG_RUNTIME_DIR` or a private temporary directory) that goes on to it.
    private static func open(_ url: String) {
        let environment = ProcessInfo.processInfo.environment
        guard environment["DISPLAY"] != nil || environment["WAYLAND_DISPLAY"] != nil else { return }
        let base = environment["XDG_RUNTIME_DIR"] ?? FileManager.default.temporaryDirectory.path
        let directory = base + "/motionctl-view-\(Syscall.processID())"
        let page = directory + "/open.html"
        let html = #"<!DOCTYPE html><meta charset="utf-8"><meta http-equiv="refresh" content="0; url=\#(url)"><a href="\#(url)">motionctl view</a>"#
        guard (try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])) != nil,
            FileManager.default.createFile(atPath: page, contents: Data(html.utf8), attributes: [.posixPermissions: 0o600])
        else { return }
        // Not waited for: xdg-open may wait as long as the browser it started runs.
        try? ChildProcess.start("xdg-open", [page])
    }
}
