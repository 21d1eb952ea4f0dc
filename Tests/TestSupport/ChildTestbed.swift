import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A umockdev testbed of a child's own: the program runs under `umockdev-run -d <description>`, which
/// makes the testbed in its own process and hands the child `$UMOCKDEV_DIR` and umockdev's preload.
/// The test process's environment is never touched (a `Testbed` sets `$UMOCKDEV_DIR` process-wide,
/// which is why its tests run one at a time in `Hardware`), so a test whose programs need only devices
/// runs beside that suite, in one marked `.onOwnThreads`: what a device's node gives is scripted
/// (`init(fixture:reads:)`), and what the test sets or reads in sysfs goes through a shell in the
/// testbed (`AttributeWriter`). Not for a test that answers a node's ioctls or writes to it as it goes,
/// nor one that reads the testbed after its program ended (umockdev-run removes it then).
public final class ChildTestbed: Sendable {
    public static let umockdevRun = "/usr/bin/umockdev-run"

    /// Whether umockdev-run is there to make one.
    public static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: umockdevRun) }

    /// The file of device descriptions (umockdev's record format) that umockdev-run loads.
    public let description: String
    /// umockdev-run's options that load it: the descriptions, and the scripts of what nodes give.
    private let loads: [String]
    /// Files of ours to remove when it goes.
    private let owned: [String]

    /// The devices of `Fixtures/<name>.umockdev`. `reads`: for a device node (`/dev/iio:device0`), what
    /// a program reads from it once it has opened it, as a driver's buffer gives it: each block of bytes
    /// given so many milliseconds after the one before (a script of reads for umockdev-run's `--script`,
    /// docs/script-format.txt of umockdev). umockdev-run does not end until each such node has been
    /// opened and read: run there only programs that read them, or end it by a signal.
    public init(fixture name: String, reads: [String: [(afterMilliseconds: Int, bytes: [UInt8])]] = [:]) throws {
        guard let url = Bundle.module.url(forResource: name, withExtension: "umockdev", subdirectory: "Fixtures") else {
            throw TestbedError("no fixture \(name).umockdev")
        }
        description = url.path
        var (loads, owned) = (["-d", url.path], [String]())
        for (node, blocks) in reads.sorted(by: { $0.key < $1.key }) {
            let script = NSTemporaryDirectory() + "child-testbed-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).script"
            // A byte under 32 is "^" and the byte + 64, "^" itself "^`"; every other byte is itself.
            let lines = blocks.flatMap { block in
                Array("r \(block.afterMilliseconds) ".utf8) + block.bytes.flatMap { byte -> [UInt8] in
                    byte == UInt8(ascii: "^") ? Array("^`".utf8) : byte < 32 ? [UInt8(ascii: "^"), byte + 64] : [byte]
                } + [UInt8(ascii: "\n")]
            }
            try Data(lines).write(to: URL(fileURLWithPath: script))
            loads += ["-s", "\(node)=\(script)"]
            owned.append(script)
        }
        (self.loads, self.owned) = (loads, owned)
    }

    /// The devices described by `devices` (as `Testbed.add` takes them), written to a file of its own.
    public init(devices: String) throws {
        description = NSTemporaryDirectory() + "child-testbed-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).umockdev"
        try devices.write(toFile: description, atomically: true, encoding: .utf8)
        loads = ["-d", description]
        owned = [description]
    }

    deinit { for path in owned { unlink(path) } }

    /// What starts umockdev-run. `env` drops `$UMOCKDEV_DIR` (another test's testbed, set process-wide while a `Hardware` test
    /// runs) and umockdev-wrapper's `LD_PRELOAD`: umockdev-run sets both for the child, and its own
    /// testbed must not be made under another one's preload. It also unblocks the signals umockdev-run
    /// passes on to the child: a program started from one of the test process's threads inherits that
    /// thread's mask, with SIGTERM blocked, and umockdev-run (unlike motiond) leaves it so, so a
    /// SIGTERM never reached the daemon (each test waited 10 s for its end, then killed it). The child
    /// dies with umockdev-run (`setpriv --pdeathsig`): a run killed at its time limit leaves nothing behind.
    static let start = [
        "/usr/bin/env", "--default-signal=HUP,INT,TERM", "-u", "UMOCKDEV_DIR", "-u", "LD_PRELOAD", umockdevRun,
    ]

    /// What runs `program` under the testbed; with `writer`, beside the writer's shell (`AttributeWriter`).
    public func command(_ program: String, _ arguments: [String], writer: AttributeWriter? = nil) throws -> (executable: String, arguments: [String]) {
        guard let writer else {
            return (Self.start[0], Array(Self.start.dropFirst()) + loads + ["--", "/usr/bin/setpriv", "--pdeathsig", "KILL", program] + arguments)
        }
        return (Self.start[0], Array(Self.start.dropFirst()) + loads + ["--", "/bin/sh", try Self.inside(program, writer: writer)] + arguments)
    }

    /// The script that umockdev-run runs in the testbed: it starts the writer's shell and `beside` (shell
    /// command lines), then becomes `program` with the script's arguments; what it started dies with it.
    /// It removes its file as it starts (the shell reads on from the open file).
    static func inside(_ program: String, writer: AttributeWriter?, beside: [String] = []) throws -> String {
        let path = NSTemporaryDirectory() + "child-testbed-inside-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        // The writer's shell reads "<path> <value>" lines and writes each value, with a newline, to its
        // path; a line "? <path>" it answers with the file's content. Each answer ends in a NUL on the
        // replies' FIFO, a write's once it is made. It ends when the test closes the requests' FIFO.
        let writing = writer.map { writer in
            #"while IFS= read -r line; do case "$line" in "? "*) { cat "${line#? }"; printf "\0"; } > '"# + writer.replies + "';; "
                + #"*) printf "%s\n" "${line#* }" > "${line%% *}"; printf "\0" > '"# + writer.replies + "';; esac; done < '" + writer.fifo + "' &"
        }
        try (["rm -f \"$0\""] + [writing].compactMap { $0 } + beside.map { "/usr/bin/setpriv --pdeathsig KILL \($0) &" }
            + ["exec /usr/bin/setpriv --pdeathsig KILL '\(program)' \"$@\"", ""])
            .joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Runs `program` under the testbed to its end (`runProgram`).
    public func run(
        _ program: String, _ arguments: [String], environment: [String: String] = [:], directory: String? = nil, timeLimit: Double = 120
    ) async throws -> ProgramRun {
        let (executable, arguments) = try command(program, arguments)
        return try await runProgram(executable, arguments, environment: environment, directory: directory, timeLimit: timeLimit)
    }

    /// Runs `program` under the testbed to its end, handing each line of its output to `heard` as it comes.
    public func run(
        _ program: String, _ arguments: [String], environment: [String: String] = [:], timeLimit: Double = 120,
        hearing heard: @escaping @Sendable (String) -> Void
    ) async throws -> ProgramRun {
        let (executable, arguments) = try command(program, arguments)
        return try await runProgram(executable, arguments, environment: environment, timeLimit: timeLimit, hearing: heard)
    }

    /// motiond on the testbed, as `DaemonProcess` starts it. Its process is umockdev-run's, which passes
    /// a signal on to motiond and exits with motiond's status; motiond dies with it, so a killed
    /// umockdev-run leaves no daemon behind. With `writer`, the test's writes through it are made in the
    /// testbed by a shell beside motiond (`AttributeWriter`). `beside`: shell command lines started in
    /// the testbed just before motiond (another daemon that must see the same devices), killed when it ends.
    public func daemon(
        socket: String, arguments: [String] = [], environment: [String: String] = [:], writer: AttributeWriter? = nil, beside: [String] = []
    ) throws -> DaemonProcess {
        // DaemonProcess runs one executable with motiond's arguments: a script that starts it so.
        let launcher = NSTemporaryDirectory() + "child-testbed-motiond-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let inside = try Self.inside(DaemonProcess.executable, writer: writer, beside: beside)
        try """
            #!/bin/sh
            exec \((Self.start + loads).map { "'\($0)'" }.joined(separator: " ")) -- /bin/sh '\(inside)' "$@"

            """.write(toFile: launcher, atomically: true, encoding: .utf8)
        defer { unlink(launcher) }
        guard chmod(launcher, 0o755) == 0 else { throw TestbedError("chmod \(launcher): errno \(errno)") }
        // A child another test's thread forked while the script was written holds it open for writing
        // until it execs: exec meanwhile is ETXTBSY (a CI run).
        return try retryingBusyText {
            try DaemonProcess(socket: socket, arguments: arguments, environment: environment, executable: launcher)
        }
    }
}

/// Writes sysfs attributes in a child's testbed, as a hand or a driver changes them, and reads them as
/// the daemon left them: each request goes down a FIFO to a shell that umockdev-run started beside
/// motiond, whose preload puts it in the testbed (`ChildTestbed.daemon(writer:)`), and a read's answer
/// comes back on another. The test process never learns the testbed's root.
public final class AttributeWriter: @unchecked Sendable {
    // @unchecked: the descriptors are set once; a request and its answer hold `asking`.
    public let fifo: String
    /// The FIFO the shell answers each request on.
    public let replies: String
    private let requests: Int32
    private let answers: Int32
    private let asking = NSLock()

    public init() throws {
        let stem = NSTemporaryDirectory() + "attribute-writer-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        (fifo, replies) = (stem, stem + "-replies")
        // Read and write: an open does not wait for the shell, and the shell's reads wait for lines
        // rather than end while the test has written nothing yet.
        func made(_ path: String) throws -> Int32 {
            guard mkfifo(path, 0o600) == 0 else { throw TestbedError("mkfifo \(path): errno \(errno)") }
            let descriptor = open(path, O_RDWR | O_CLOEXEC | (path == stem ? 0 : O_NONBLOCK))
            guard descriptor >= 0 else { throw TestbedError("open \(path): errno \(errno)") }
            return descriptor
        }
        requests = try made(fifo)
        answers = try made(replies)
    }

    /// Ends the shell's reading (end of file) and removes the FIFOs.
    deinit {
        close(requests)
        close(answers)
        unlink(fifo)
        unlink(replies)
    }

    /// Sends `request` and returns the shell's answer, up to its NUL; throws if none came within `seconds`.
    private func ask(_ request: String, seconds: Double = 5) throws -> String {
        try asking.withLock {
            let bytes = Array((request + "\n").utf8)
            _ = bytes.withUnsafeBytes { Glibc.write(requests, $0.baseAddress, $0.count) }
            var answer: [UInt8] = []
            var byte: UInt8 = 0
            let deadline = Date().addingTimeInterval(seconds)
            while true {
                if read(answers, &byte, 1) == 1 {
                    if byte == 0 { return String(decoding: answer, as: UTF8.self) }
                    answer.append(byte)
                    continue
                }
                guard Date() < deadline else { throw TestbedError("no answer to \"\(request)\" within \(seconds) s") }
                var reader = pollfd(fd: answers, events: Int16(POLLIN), revents: 0)
                _ = poll(&reader, 1, 100)
            }
        }
    }

    /// The content of `attribute` of the IIO device `device` in the testbed, as the child reads it
    /// (empty if it cannot); throws if no answer came within `seconds`.
    public func attribute(_ device: String, _ attribute: String, seconds: Double = 5) throws -> String {
        try ask("? /sys/bus/iio/devices/\(device)/\(attribute)", seconds: seconds)
    }

    /// Writes `value` and a newline to `path` (as the child sees it, `/sys/…`), and returns once it is
    /// written, as a write to a file of the test's own would (the test then fails on what the write
    /// did not change if the shell never answered).
    public func write(_ value: String, to path: String) {
        _ = try? ask("\(path) \(value)")
    }

    /// Writes `value` and a newline to `attribute` of the IIO device `device` (`iio:device0`).
    public func set(_ device: String, _ attribute: String, _ value: String) {
        write(value, to: "/sys/bus/iio/devices/\(device)/\(attribute)")
    }
}
