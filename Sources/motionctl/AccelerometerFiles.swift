import ArgumentParser
import FoundationEssentials
import MotionCore

/// The files of the offline gait commands (`steps`, `activity`, `gestures`): an accelerometer CSV in, a CSV out.
struct AccelerometerFiles: ParsableArguments {
    @Option(help: "The accelerometer CSV file to read (columns t, ax, ay, az; others ignored).")
    var input: String

    @Option(help: "The CSV file to write.")
    var output: String

    /// Reads and parses the input; errors name the file.
    func read() throws -> AccelerometerTable {
        let text: String
        do {
            text = try String(contentsOfFile: input, encoding: .utf8)
        } catch {
            throw ValidationError("\(input): cannot read: \(error)")
        }
        let table: AccelerometerTable
        do {
            table = try AccelerometerTable(csv: text)
        } catch {
            throw ValidationError("\(input): \(error)")
        }
        Self.reportRepeats(table.repeatedTimes, in: input)
        return table
    }

    /// Says on standard error how many rows of `file` were left out for repeating the previous row's time.
    static func reportRepeats(_ count: Int, in file: String) {
        guard count > 0 else { return }
        writeStandardError("\(file): left out \(count) row\(count == 1 ? "" : "s") whose t repeats the previous row's\n")
    }

    /// An instant (ns) as the seconds written: to the millisecond, finer than the 40 ms grid the
    /// detector runs on (not 9.360000000000001).
    static func seconds(_ instant: Int64) -> String {
        (Double(instant) * 1e-9).fixed(3)
    }
}
