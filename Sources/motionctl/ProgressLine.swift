import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One terminal line rewritten with a bar; plain lines where the output is not a terminal.
final class ProgressLine: Sendable {
    /// The line shown last, and the tenths shown as plain lines: written from the subscription's thread.
    private let shown = Mutex<(last: String, lastTenth: Int)>(("", -1))
    private let terminal = isatty(STDOUT_FILENO) == 1

    /// Ends the line (a terminal's rewritten one).
    func finish() {
        shown.withLock { shown in
            if terminal, !shown.last.isEmpty { print("") }
            shown.last = ""
        }
    }

    /// Shows `fraction` (0…1) done as a bar, with `text`: on a terminal, the line is rewritten; else a
    /// plain line each time the bar grows by a tenth.
    func show(_ fraction: Double, _ text: String) {
        let filled = max(0, min(20, Int(fraction * 20)))
        let line = "[\(String(repeating: "#", count: filled))\(String(repeating: ".", count: 20 - filled))] \(text)"
        shown.withLock { shown in
            guard line != shown.last else { return }
            shown.last = line
            if terminal {
                print("\r\(line)   ", terminator: "")
                fflush(nil)
            } else if filled / 2 != shown.lastTenth {
                shown.lastTenth = filled / 2
                print(line)
                fflush(nil)
            }
        }
    }
}
