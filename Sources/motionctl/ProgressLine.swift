import Foundation

/// One terminal line rewritten with a bar; plain lines where the output is not a terminal.
final class ProgressLine: @unchecked Sendable {
    // @unchecked: `last` is behind the lock; it is written from the subscription's thread.
    private let lock = NSLock()
    private var last = ""
    /// The tenths shown as plain lines.
    private var lastTenth = -1
    private let terminal = isatty(STDOUT_FILENO) == 1

    /// Ends the line (a terminal's rewritten one).
    func finish() {
        lock.withLock {
            if terminal, !last.isEmpty { print("") }
            last = ""
        }
    }

    /// Shows `fraction` (0…1) done as a bar, with `text`: on a terminal, the line is rewritten; else a
    /// plain line each time the bar grows by a tenth.
    func show(_ fraction: Double, _ text: String) {
        let filled = max(0, min(20, Int(fraction * 20)))
        let line = "[\(String(repeating: "#", count: filled))\(String(repeating: ".", count: 20 - filled))] \(text)"
        lock.withLock {
            guard line != last else { return }
            last = line
            if terminal {
                print("\r\(line)   ", terminator: "")
                fflush(nil)
            } else if filled / 2 != lastTenth {
                lastTenth = filled / 2
                print(line)
                fflush(nil)
            }
        }
    }
}
