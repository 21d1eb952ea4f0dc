/// IMU readings in the CSV format of the BROAD dataset: header `t,ax,ay,az,gx,gy,gz,mx,my,mz`, then one
/// row per instant (s; m/s² specific force, +9.81 up at rest; rad/s; µT). Parsing only, no I/O.
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
        /// Magnetic field, µT.
        public var magnetometer: Vector3
    }

    /// What is wrong with a CSV text.
    public enum ParseError: Error, Hashable, CustomStringConvertible {
        case badHeader(String)
        case badRow(line: Int)
        case tooFewRows

        public var description: String {
            switch self {
            case .badHeader(let h): "the header is \"\(h)\", expected t,ax,ay,az,gx,gy,gz,mx,my,mz"
            case .badRow(let line): "line \(line): expected 10 finite numbers"
            case .tooFewRows: "fewer than two rows"
            }
        }
    }

    /// The rows, in file order.
    public var rows: [Row] = []

    /// Parses CSV text.
    public init(csv: String) throws(ParseError) {
        var lines = csv.split(whereSeparator: \.isNewline).makeIterator()
        let header = lines.next().map(String.init) ?? ""
        guard header.split(separator: ",").map({ $0.filter { !$0.isWhitespace } }) == ["t", "ax", "ay", "az", "gx", "gy", "gz", "mx", "my", "mz"] else {
            throw .badHeader(header)
        }
        var number = 1
        while let line = lines.next() {
            number += 1
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map { Double($0) }
            guard fields.count == 10, fields.allSatisfy({ $0?.isFinite == true }) else { throw .badRow(line: number) }
            let v = fields.map { $0! }
            rows.append(Row(
                time: v[0], timestamp: Int64((v[0] * 1e9).rounded()),
                accelerometer: Vector3(x: v[1], y: v[2], z: v[3]),
                gyroscope: Vector3(x: v[4], y: v[5], z: v[6]),
                magnetometer: Vector3(x: v[7], y: v[8], z: v[9])))
        }
        guard rows.count >= 2 else { throw .tooFewRows }
    }

    /// The sampling rate, Hz, from the median interval between rows.
    public var rate: Double {
        let intervals = zip(rows.dropFirst(), rows).map { $0.time - $1.time }.sorted()
        return 1 / intervals[intervals.count / 2]
    }
}
