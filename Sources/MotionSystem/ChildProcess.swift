import CLinux

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Other programs, run to their end or started: `posix_spawnp` (the program looked for on `PATH`,
/// the environment this process's), standard input inherited. What Foundation's `Process` did for
/// motionctl (systemd-hwdb, udevadm, xdg-open), without Foundation.
public enum ChildProcess {
    /// A program run to its end: its exit status (128 + the signal's number if a signal ended it)
    /// and what it wrote to its standard output and error.
    public struct Finished: Sendable, Equatable {
        public var status: Int32
        public var output: [UInt8]
        public var errors: [UInt8]
    }

    /// Runs `program` with `arguments` to its end, collecting its standard output and error. Both
    /// pipes are read together, so that a program that fills one (systemd-hwdb warning of hundreds
    /// of lines) never waits for a reader still at the other. Throws the errno of a pipe, a spawn
    /// (ENOENT: no such program) or a wait that failed.
    public static func run(_ program: String, _ arguments: [String]) throws(Errno) -> Finished {
        let output = try PipeEnds()
        let errors = try PipeEnds()
        let pid = try spawn(program, arguments, output: output.writing.rawValue, errors: errors.writing.rawValue)
        // The write ends close here, in this process, so that each pipe ends when the child's copies do.
        let outputReading = output.closingWriteEnd()
        let errorsReading = errors.closingWriteEnd()
        var collected = Finished(status: 0, output: [], errors: [])
        try collect(outputReading.rawValue, errorsReading.rawValue, into: &collected)
        collected.status = try waitForExit(pid)
        return collected
    }

    /// Starts `program` with `arguments`, its output and errors thrown away, and does not wait for it:
    /// a thread of its own reaps it when it ends (if none can be made, it stays a zombie until this
    /// process ends). Throws the errno of a spawn that failed.
    public static func start(_ program: String, _ arguments: [String]) throws(Errno) {
        let pid = try spawn(program, arguments, output: nil, errors: nil)
        _ = OSThread.startDetached(name: "reap \(program)") { _ = try? waitForExit(pid) }
    }

    /// `posix_spawnp`: standard output and error onto `output` and `errors`, or /dev/null when nil.
    private static func spawn(_ program: String, _ arguments: [String], output: Int32?, errors: Int32?) throws(Errno) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (target, source) in [(Int32(1), output), (Int32(2), errors)] {
            // dup2 clears close-on-exec on the copy; the pipe's own descriptors close at the exec.
            if let source {
                posix_spawn_file_actions_adddup2(&actions, source, target)
            } else {
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
            }
        }
        let argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid = pid_t()
        let status = posix_spawnp(&pid, program, &actions, nil, argv, environ)
        guard status == 0 else { throw Errno(rawValue: status) }
        return pid
    }

    /// Reads `output` and `errors` until both end, each into its part of `collected`.
    private static func collect(_ output: Int32, _ errors: Int32, into collected: inout Finished) throws(Errno) {
        var open = [pollfd(fd: output, events: Int16(POLLIN), revents: 0), pollfd(fd: errors, events: Int16(POLLIN), revents: 0)]
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while open.contains(where: { $0.fd >= 0 }) {
            _ = try Syscall.retryingInterrupts { poll(&open, nfds_t(open.count), -1) }.get()
            for index in open.indices where open[index].fd >= 0 && open[index].revents != 0 {
                let n = try buffer.withUnsafeMutableBytes { Syscall.read(open[index].fd, into: $0) }.get()
                // End of file (or an error the poll reported): a negative descriptor is skipped by poll.
                if n == 0 { open[index].fd = -1; continue }
                if index == 0 { collected.output += buffer[0..<n] } else { collected.errors += buffer[0..<n] }
            }
        }
    }

    /// `waitpid(pid, &status, 0)`: the exit status, or 128 + the signal's number.
    private static func waitForExit(_ pid: pid_t) throws(Errno) -> Int32 {
        var status: Int32 = 0
        _ = try Syscall.retryingInterrupts { waitpid(pid, &status, 0) }.get()
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}

/// `pipe2(O_CLOEXEC)`'s two ends, each owned.
private struct PipeEnds: ~Copyable {
    let reading: OwnedDescriptor
    let writing: OwnedDescriptor

    init() throws(Errno) {
        var ends: [Int32] = [-1, -1]
        guard motiond_pipe2(&ends, O_CLOEXEC) == 0 else { throw Errno(rawValue: errno) }
        reading = OwnedDescriptor(ends[0])
        writing = OwnedDescriptor(ends[1])
    }

    /// The read end; the write end closes as this returns.
    consuming func closingWriteEnd() -> OwnedDescriptor {
        reading
    }
}
