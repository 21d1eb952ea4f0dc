/// Accelerometer readings from a CSV file whose header names the columns `t` (s), `ax`, `ay`, `az`
/// (m/s², specific force, any device frame) among any others, which are ignored: a BROAD recording
/// reads as it is. Parsing only, no I/O.
public struct AccelerometerTable: Sendable {
    /// One row.
    public struct Row: Sendable, Hashable {
        /// Time, s, as written.
        public var time: Double
        /// Time in integer nanoseconds.
        public var timestamp: Int64
        /// Specific force, m/s².
        public var specificForce: Vector3

        /// A row at `time` (s; `timestamp` the same in ns) with `specificForce` (m/s²).
        public init(time: Double, timestamp: Int64, specificForce: Vector3) {
            self.time = time
            self.timestamp = timestamp
            self.specificForce = specificForce
        }
    }

    /// What is wrong with a CSV text.
    public enum ParseError: Error, Hashable, CustomStringConvertible {
        case missingColumns([String])
        case badRow(line: Int)
        case timeOutOfRange(line: Int)
        case timeGoesBack(line: Int)
        case tooFewRows

        public var description: String {
            switch self {
            case .missingColumns(let names): "the header lacks the column(s) \(names.joined(separator: ", ")) (it needs t, ax, ay, az)"
            case .badRow(let line): "line \(line): t, ax, ay, az must be finite numbers"
            case .timeOutOfRange(let line): "line \(line): t is beyond ±292 years, which nanoseconds cannot hold"
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
        var lines = csv.split(whereSeparator: \.isNewline).makeIterator()
        let header = (lines.next() ?? "").split(separator: ",", omittingEmptySubsequences: false).map { $0.filter { !$0.isWhitespace } }
        let wanted = ["t", "ax", "ay", "az"]
        let columns = wanted.map { header.firstIndex(of: $0) }
        let missing = zip(wanted, columns).filter { $0.1 == nil }.map(\.0)
        guard missing.isEmpty else { throw .missingColumns(missing) }
        let indices = columns.map { $0! }
        let width = indices.max()! + 1
        var number = 1
        while let line = lines.next() {
            number += 1
            let cells = line.split(separator: ",", omittingEmptySubsequences: false)
            guard cells.count >= width else { throw .badRow(line: number) }
            var values = (0.0, 0.0, 0.0, 0.0)
            for (slot, index) in indices.enumerated() {
                guard let value = Double(cells[index].filter { !$0.isWhitespace }), value.isFinite else { throw .badRow(line: number) }
                switch slot {
                case 0: values.0 = value
                case 1: values.1 = value
                case 2: values.2 = value
                default: values.3 = value
                }
            }
            guard let timestamp = Units.nanoseconds(fromSeconds: values.0) else { throw .timeOutOfRange(line: number) }
            if let last = rows.last, timestamp <= last.timestamp {
                guard timestamp == last.timestamp else { throw .timeGoesBack(line: number) }
                repeatedTimes += 1
                continue
            }
            rows.append(Row(
                time: values.0, timestamp: timestamp,
                specificForce: Vector3(x: values.1, y: values.2, z: values.3)))
        }
        guard rows.count >= 2 else { throw .tooFewRows }
    }
}
