import MotionSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Writes log lines to a descriptor (standard error, which journald reads) from a thread of its own,
/// so that a log call never waits for the reader: the event loop must not block in `write` when the
/// journal is slow or nobody reads the pipe. At most `capacity` lines wait; beyond that they are
/// dropped and counted, and the count is written once the writer can write again.
///
/// The thread runs only while lines wait: it is made by the call that finds none writing and ends
/// once the queue is empty, so a daemon at rest keeps no writer (issue 63: four threads at rest).
public final class LogWriter: Sendable {
    /// Lines that wait at most.
    public static let capacity = 1024

    private struct State {
        var lines: [[UInt8]] = []
        var dropped = 0
        /// Whether a writer thread runs (it takes what waits, and ends when nothing does).
        var writing = false
    }

    private let descriptor: Int32
    /// Whether entries go to the journal natively (`Journal.send`), each a list of fields separated by
    /// NUL bytes, rather than as lines written to `descriptor`.
    public let writesToJournal: Bool
    private let state = Mutex(State())

    /// The writer of standard error, shared by every handler: natively to the journal where systemd
    /// connected standard error to it (a service), so that metadata become fields.
    public static let standardError = LogWriter(descriptor: STDERR_FILENO, toJournal: Journal.isJournalStream(STDERR_FILENO))

    /// A writer of `descriptor`, which it never closes; `toJournal`: entries are the journal's
    /// fields (see `writesToJournal`), `descriptor` only for what cannot be sent.
    public init(descriptor: Int32, toJournal: Bool = false) {
        self.descriptor = descriptor
        writesToJournal = toJournal
    }

    /// Queues one line (its bytes end in a newline), or one entry's fields (`writesToJournal`); never
    /// waits, but for the write itself when no thread can be made (the process's limits reached).
    public func write(_ line: [UInt8]) {
        let startsWriter = state.withLock { state in
            if state.lines.count < Self.capacity { state.lines.append(line) } else { state.dropped += 1 }
            defer { state.writing = true }
            return !state.writing
        }
        guard startsWriter else { return }
        if OSThread.startDetached(name: "log writer", body: { [self] in run() }) != nil { run() }
    }

    /// Waits until every line queued so far is written, for at most `timeout` seconds (before the
    /// process exits, so that its last words reach the journal).
    public func flush(timeout: Double = 2) {
        let deadline = Syscall.monotonicNanoseconds() + Int64(timeout * 1e9)
        while state.withLock({ !$0.lines.isEmpty || $0.dropped > 0 || $0.writing }), Syscall.monotonicNanoseconds() < deadline {
            Syscall.sleep(nanoseconds: 1_000_000)
        }
    }

    /// Writes one queued entry: a line to the descriptor, or fields to the journal (and, should the
    /// journal refuse them, their message as a line, so that nothing is lost silently).
    private func emit(_ entry: [UInt8]) {
        guard writesToJournal else {
            _ = Syscall.write(descriptor, entry)
            return
        }
        if case .failure = Journal.send(entry: entry) {
            // As a line journald reads from the stream, its priority first.
            let fields = entry.split(separator: 0)
            func value(_ name: String) -> ArraySlice<UInt8> {
                fields.first { $0.starts(with: Array("\(name)=".utf8)) }?.dropFirst(name.utf8.count + 1) ?? []
            }
            _ = Syscall.write(descriptor, Array("<".utf8) + value("PRIORITY") + Array(">".utf8) + value("MESSAGE") + [UInt8(ascii: "\n")])
        }
    }

    /// Writes what waits until nothing does, then lets the next `write` start a writer again.
    private func run() {
        var batch: [[UInt8]] = []
        while true {
            let dropped: Int? = state.withLock { state in
                guard !state.lines.isEmpty || state.dropped > 0 else {
                    state.writing = false
                    return nil
                }
                swap(&batch, &state.lines)
                defer { state.dropped = 0 }
                return state.dropped
            }
            guard let dropped else { return }
            // One write per line: lines from other writers of the same descriptor don't interleave.
            for line in batch { emit(line) }
            batch.removeAll(keepingCapacity: true)
            if dropped > 0 {
                let message = "\(dropped) log lines dropped: the log was not read fast enough"
                emit(Array((writesToJournal ? "PRIORITY=4\0MESSAGE=\(message)" : "<4>\(message)\n").utf8))
            }
        }
    }
}
