/// IMU readings in the CSV format of the BROAD dataset: header `t,ax,ay,az,gx,gy,gz,mx,my,mz`, then one
/// row per instant (s; m/s² specific force, +9.81 up at rest; rad/s; µT). A row whose `mx,my,mz` are
/// empty has no magnetometer sample (a magnetometer slower than the IMU). Parsing only, no I/O.
public struct IMUTable: Sendable {
    /// One row.
    public struct Row: Sendable, Hashable {
        /// Time, s, as written.
        public var time: Double
        /// Time in integer nanoseconds.
        public var timestamp: Int64
        /// Specific force, m/s².
        public var accelerometer: Vector3
        /// Rotation rate, rad/s.
        public var gyroscope: Vector3
        /// Magnetic field, µT; `nil` where the row has no magnetometer sample.
        public var magnetometer: Vector3?
    }

    /// What is wrong with a CSV text.
    public enum ParseError: Error, Hashable, CustomStringConvertible {
        case badHeader(String)
        case badRow(line: Int)
        case timeGoesBack(line: Int)
        case tooFewRows

        public var description: String {
            switch self {
            case .badHeader(let h): "the header is \"\(h)\", expected t,ax,ay,az,gx,gy,gz,mx,my,mz"
            case .badRow(let line): "line \(line): expected 10 finite numbers (or 7 and three empty magnetometer fields), t within ±292 years"
            case .timeGoesBack(let line): "line \(line): t is before the previous row's"
            case .tooFewRows: "fewer than two rows"
            }
        }
    }

    /// The rows, in file order.
    public var rows: [Row] = []
    /// Rows left out because their time repeats the previous row's (as the daemon skips a repeated
    /// timestamp): real phones' files have one or two in 20,000 rows.
    public private(set) var repeatedTimes = 0

    /// Parses CSV text.
    public init(csv: String) throws(ParseError) {
        // Bytes, not characters: the text is ASCII, and splitting it by grapheme cost 50 µs a row.
        let blank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r") }
        var lines = csv.utf8.split(whereSeparator: { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") }).makeIterator()
        let header = lines.next().map { String(Substring($0)) } ?? ""
        guard header.split(separator: ",").map({ $0.filter { !$0.isWhitespace } }) == ["t", "ax", "ay", "az", "gx", "gy", "gz", "mx", "my", "mz"] else {
            throw .badHeader(header)
        }
        var number = 1
        var v = [Double](repeating: 0, count: 10)
        while let line = lines.next() {
            number += 1
            let cells = line.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
            guard cells.count == 10 else { throw .badRow(line: number) }
            let hasMagnetometer = !cells[7...].allSatisfy { $0.allSatisfy(blank) }
            for index in 0..<(hasMagnetometer ? 10 : 7) {
                guard let value = Double(Substring(cells[index])), value.isFinite else { throw .badRow(line: number) }
                v[index] = value
            }
            guard let timestamp = Units.nanoseconds(fromSeconds: v[0]) else { throw .badRow(line: number) }
            // Rates come from the intervals: a zero or negative one would make one infinite.
            if let previous = rows.last, timestamp <= previous.timestamp {
                guard timestamp == previous.timestamp else { throw .timeGoesBack(line: number) }
                repeatedTimes += 1
                continue
            }
            rows.append(Row(
                time: v[0], timestamp: timestamp,
                accelerometer: Vector3(x: v[1], y: v[2], z: v[3]),
                gyroscope: Vector3(x: v[4], y: v[5], z: v[6]),
                magnetometer: hasMagnetometer ? Vector3(x: v[7], y: v[8], z: v[9]) : nil))
        }
        guard rows.count >= 2 else { throw .tooFewRows }
    }

    /// The sampling rate, Hz, from the median interval between rows.
    public var rate: Double { Self.medianRate(rows.map(\.time)) }

    /// The magnetometer's rate, Hz: its samples per second, from the mean interval between rows that
    /// have one, leaving out pauses (a value held still, written only when it changed, or a hole):
    /// intervals of `pause` or more, and twice the median or more, so that a magnetometer slower than
    /// 10 Hz still has a rate (it had none, and `motionctl fuse` crashed on the NaN); `nil` with fewer
    /// than two. The fusion's heading path counts its time
    /// constants in samples, so this is the rate of the samples given, as the daemon measures a polled
    /// magnetometer's (`MeasurementRate`): a 285.7 Hz magnetometer whose repeated counts were left out
    /// is fused at the 200 Hz of its changes, else each correction is weighed for 285.7 Hz and the
    /// heading corrected 30 % slower than designed. Not the median interval either: a 100 Hz
    /// magnetometer on the rows of a 285.7 Hz IMU has intervals of whole rows (10.5 ms mostly, 7 ms at
    /// times), whose median (95.2 Hz) is not its rate.
    public var magnetometerRate: Double? {
        let times = rows.filter { $0.magnetometer != nil }.map(\.time)
        guard times.count >= 2 else { return nil }
        let intervals = zip(times.dropFirst(), times).map { $0 - $1 }
        let pause = max(Self.pause, 2 / Self.medianRate(times))
        let steady = intervals.filter { $0 < pause }
        return Double(steady.count) / steady.reduce(0, +)
    }

    /// The shortest hold that counts as a pause, s: the daemon's (`ChangeInstant.longestHold`), which
    /// re-sends a value held still 10 times a second.
    static let pause = 0.1

    private static func medianRate(_ times: [Double]) -> Double {
        let intervals = zip(times.dropFirst(), times).map { $0 - $1 }.sorted()
        return 1 / intervals[intervals.count / 2]
    }
}
