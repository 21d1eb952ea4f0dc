import Foundation
import Subprocess
import SystemPackage

/// How a program run to its end went.
public struct ProgramRun: Sendable {
    /// The exit status, or 128 + the signal that ended it (as a shell reports it).
    public var status: Int32
    /// Standard output.
    public var output: String
    /// Standard error.
    public var errors: String
}

/// A program that did not end within its time limit (it has been killed).
public struct ProgramTimedOut: Error, CustomStringConvertible {
    public var executable: String
    public var seconds: Double
    public var description: String { "\(executable) did not end within \(seconds) s: killed" }
}

/// Runs `executable` (a path, or a name looked up in `PATH`) to its end, through swift-subprocess,
/// and kills it after `timeLimit` seconds, so that a stuck program fails its test rather than
/// hanging the run. Not Foundation's `Process`: on Linux it learns of the child's end from a socket
/// the child inherits, so a program that leaves a process behind (tmux's server) made
/// `waitUntilExit()` wait forever (swift-corelibs-foundation issue 4795); swift-subprocess waits on
/// the child's pidfd.
public func runProgram(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:], directory: String? = nil,
    timeLimit: Double = 120
) async throws -> ProgramRun {
    let configuration = programConfiguration(executable, arguments, environment: environment, directory: directory)
    return try await withTimeLimit(timeLimit, executable) {
        let result = try await run(configuration, output: .string(limit: 1 << 24), error: .string(limit: 1 << 24))
        return ProgramRun(status: result.terminationStatus.shellStatus, output: result.standardOutput, errors: result.standardError)
    }
}

/// Runs `executable` as `runProgram` above does, handing each line of its standard output to `heard`
/// as it comes (a line ends at a newline or a carriage return), so that a test answers what a program
/// asks when it asks, as a person at it would, rather than after a guessed time. `output` is the lines
/// joined by newlines.
public func runProgram(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:], timeLimit: Double = 120,
    hearing heard: @escaping @Sendable (String) -> Void
) async throws -> ProgramRun {
    let configuration = programConfiguration(executable, arguments, environment: environment, directory: nil)
    return try await withTimeLimit(timeLimit, executable) {
        let result = try await run(configuration, input: .none, output: .sequence, error: .string(limit: 1 << 24)) { execution in
            var lines: [String] = []
            for try await line in execution.standardOutput.strings() {
                heard(line)
                lines.append(line)
            }
            return lines.joined(separator: "\n")
        }
        return ProgramRun(status: result.terminationStatus.shellStatus, output: result.closureResult, errors: result.standardError)
    }
}

/// How swift-subprocess is to start `executable`: the environment read under `environmentLock`, not
/// inherited as the launch finds it, with `environment` added.
private func programConfiguration(_ executable: String, _ arguments: [String], environment: [String: String], directory: String?) -> Configuration {
    var variables: [Environment.Key: String] = [:]
    for (name, value) in steadyEnvironment().merging(environment, uniquingKeysWith: { $1 }) {
        variables[Environment.Key(stringLiteral: name)] = value
    }
    return Configuration(
        executable: executable.contains("/") ? .path(FilePath(executable)) : .name(executable),
        arguments: Arguments(arguments),
        environment: .custom(variables),
        workingDirectory: directory.map { FilePath($0) })
}

/// Runs `body` (a program's run) and gives up after `seconds`: the first to finish decides; cancelling
/// the other kills the program if it is still running.
private func withTimeLimit(_ seconds: Double, _ executable: String, _ body: @escaping @Sendable () async throws -> ProgramRun) async throws -> ProgramRun {
    try await withThrowingTaskGroup(of: ProgramRun?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let finished = first else {
            throw ProgramTimedOut(executable: executable, seconds: seconds)
        }
        return finished
    }
}

extension TerminationStatus {
    /// The exit status, or 128 + the signal that ended it (as a shell reports it).
    var shellStatus: Int32 {
        switch self {
        case .exited(let code): code
        case .signaled(let signal): 128 + signal
        }
    }
}

extension Process {
    /// Waits up to `seconds` for the process to end; past that, kills it (SIGKILL), waits for that,
    /// and returns `false`: a process that does not stop fails its test instead of hanging the run.
    @discardableResult
    public func waitUntilExit(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while isRunning && Date() < deadline { usleep(1000) }
        guard isRunning else { return true }
        kill(processIdentifier, SIGKILL)
        waitUntilExit()
        return false
    }

    /// Waits up to `seconds` for the process to end, by `hasNotEnded`; past that, kills it (SIGKILL)
    /// and returns `false`. For a caller that does not read the termination status, which
    /// Foundation may not know yet.
    @discardableResult
    public func waitUntilEnded(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while hasNotEnded && Date() < deadline { usleep(1000) }
        guard hasNotEnded else { return true }
        // Where each thread waits, for the report of a process that would not end.
        FileHandle.standardError.write(Data("\(processIdentifier) did not end within \(seconds) s; its threads:\n\(threadStates(ofProcess: processIdentifier))\n".utf8))
        kill(processIdentifier, SIGKILL)
        while hasNotEnded { usleep(1000) }
        return false
    }

    /// The process's resident memory now, MB (`VmRSS` of /proc/PID/status); 0 once it has ended.
    public var residentMegabytes: Double {
        guard let status = try? String(contentsOfFile: "/proc/\(processIdentifier)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Double(line.split(separator: " ")[1])
        else { return 0 }
        return kilobytes / 1024
    }

    /// The CPU time the process has used so far, user and system, s (0 once it has ended).
    public var cpuSeconds: Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(processIdentifier)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        // After the command's closing parenthesis: state is field 3, utime 14 and stime 15 (proc(5)).
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The share of one core the process used over the next `seconds`, %.
    public func cpuPercent(over seconds: Double) -> Double {
        let before = cpuSeconds
        usleep(UInt32(seconds * 1e6))
        return (cpuSeconds - before) / seconds * 100
    }

    /// Whether the process still runs. Not `isRunning`: Foundation learns of a child's end from a
    /// socket that the children started after it inherit (swift-corelibs-foundation issue 4795), so
    /// `isRunning` stays true until they end too. A process that ended and is not yet reaped is a
    /// zombie, state `Z` in /proc/PID/stat.
    public var hasNotEnded: Bool {
        guard isRunning, let stat = try? String(contentsOfFile: "/proc/\(processIdentifier)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return !stat[close...].hasPrefix(") Z")
    }
}
