import Foundation

/// How a program run to its end went.
public struct ProgramRun: Sendable {
    public var status: Int32
    /// Standard output.
    public var output: String
    /// Standard error.
    public var errors: String
}

/// Runs `executable` (a path, or a name looked up in `PATH`) to its end. Output goes through files,
/// not pipes: nothing blocks on a full pipe, and a background process the program leaves behind
/// (a tmux server) cannot hold the reading end open.
public func runProgram(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:], directory: String? = nil
) throws -> ProgramRun {
    let process = Process()
    if executable.contains("/") {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
    } else {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [executable] + arguments
    }
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    let base = NSTemporaryDirectory() + "program-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    defer {
        try? FileManager.default.removeItem(atPath: base + ".out")
        try? FileManager.default.removeItem(atPath: base + ".err")
    }
    _ = FileManager.default.createFile(atPath: base + ".out", contents: nil)
    _ = FileManager.default.createFile(atPath: base + ".err", contents: nil)
    process.standardOutput = FileHandle(forWritingAtPath: base + ".out")
    process.standardError = FileHandle(forWritingAtPath: base + ".err")
    try process.run()
    process.waitUntilExit()
    func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
    return ProgramRun(status: process.terminationStatus, output: read(base + ".out"), errors: read(base + ".err"))
}
