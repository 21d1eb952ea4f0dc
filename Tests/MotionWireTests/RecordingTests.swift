import Foundation
import MotionCore
import Testing

@testable import MotionWire

@Suite struct RecordingTests {
    static let header = #"{"devices":[{"channels":{},"device":"iio:device0","kinds":["accelerometer","gyroscope"],"mode":"buffered","mount_matrix":[1,0,0,0,1,0,0,0,1],"mount_matrix_source":"identity","name":"bmi160"}],"format":"motiond-recording","version":1}"#

    func file(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "recording-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).motionrec"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func samplesWrittenAndReadBackAreTheSameBitForBit() throws {
        let samples = [
            Recording.Sample(stream: .accelerometer, timestamp: 1_000, vector: Vector3(x: 0.1, y: -1e-7, z: -0.9990234375)),
            Recording.Sample(stream: .gyroscope, timestamp: 1_000, vector: Vector3(x: .pi, y: 0, z: -0.0010650000000000001)),
        ]
        let text = Self.header + "\n" + samples.map { Recording.line(for: $0) }.joined()
        let read = try Recording.read(path: file(text))
        #expect(read.samples == samples)
        #expect(read.header.devices.first?.name == "bmi160")
        // Written again, the same text.
        #expect(read.samples.map { Recording.line(for: $0) }.joined() == samples.map { Recording.line(for: $0) }.joined())
    }

    @Test(arguments: [
        ("gyroscope 1000 0.1 0.2\n", 2, "not a sample line"),
        ("gyroscope 1000 0.1 0.2 nan\n", 2, "not a sample line"),
        ("gyroscope soon 0.1 0.2 0.3\n", 2, "not a sample line"),
        ("accelerometer 1 0 0 -1\nmagnetometer 2 1 2 3\n", 3, "no device in the header has one"),
        ("motion 1 0 0 0\n", 2, "not a sample line"),
    ])
    func aBadLineIsRefusedWithItsNumber(body: String, line: Int, reason: String) throws {
        let path = try file(Self.header + "\n" + body)
        #expect {
            try Recording.read(path: path)
        } throws: { error in
            let e = error as? Recording.ReadError
            return e?.line == line && e?.reason.contains(reason) == true
        }
    }

    @Test func aFileThatIsNotARecordingSaysSo() throws {
        #expect(throws: Recording.ReadError.self) { try Recording.read(path: file("t,ax,ay,az\n1,2,3,4\n")) }
        let newer = Self.header.replacingOccurrences(of: #""version":1"#, with: #""version":2"#)
        #expect { try Recording.read(path: file(newer + "\n")) } throws: { "\($0)".contains("version 2") }
        #expect { try Recording.read(path: "/nonexistent/x.motionrec") } throws: { "\($0)".contains("cannot read") }
    }
}

extension RecordingTests {
    /// A pressure sensor's readings are recorded as `pressure <ns> <kPa>` and come back as the
    /// altitude stream's samples; a pressure of 0 or less is no reading.
    @Test func pressureReadingsAreRecordedAndReadBack() throws {
        let header = #"{"devices":[{"channels":{},"device":"iio:device3","kinds":["pressure"],"mode":"polled","mount_matrix":[1,0,0,0,1,0,0,0,1],"mount_matrix_source":"identity","name":"ms5611"}],"format":"motiond-recording","version":1}"#
        let sample = Recording.Sample(stream: .altitude, timestamp: 5_000, vector: Vector3(x: 89.875, y: 0, z: 0))
        #expect(Recording.line(for: sample) == "pressure 5000 89.875\n")
        let read = try Recording.read(path: file(header + "\n" + Recording.line(for: sample)))
        #expect(read.samples == [sample])
        #expect(throws: Recording.ReadError.self) { try Recording.read(path: file(header + "\npressure 6000 -1\n")) }
        #expect(throws: Recording.ReadError.self) { try Recording.read(path: file(Self.header + "\npressure 6000 100\n")) }
    }
}

/// gzip-compressed recordings (the bundled one ships so). The reference is the real `gzip` CLI:
/// what it compresses reads back as the plain file, and what it decompresses is the plain file.
@Suite struct GzipRecordingTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized.path
    static let bundled = root + "/Recordings/broad-04-slow-rotation.motionrec.gz"

    /// Runs `/usr/bin/env gzip arguments` with `input` on stdin and returns its stdout.
    func gzip(_ arguments: [String], input: String) throws -> String {
        let output = NSTemporaryDirectory() + "gzip-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["gzip"] + arguments
        process.standardInput = FileHandle(forReadingAtPath: input)
        #expect(FileManager.default.createFile(atPath: output, contents: nil))
        process.standardOutput = FileHandle(forWritingAtPath: output)
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "gzip \(arguments) < \(input)")
        return output
    }

    func plainFile(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "recording-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).motionrec"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func aRecordingCompressedByGzipReadsAsThePlainFile() throws {
        let samples = (0..<5_000).map { (i: Int) -> Recording.Sample in
            let stream: StreamKind = i % 2 == 0 ? .accelerometer : .gyroscope
            let vector = Vector3(x: Double(i) * 1e-3, y: -0.1 / Double(i + 1), z: -0.9990234375)
            return Recording.Sample(stream: stream, timestamp: Int64(i) * 2_500_000, vector: vector)
        }
        let plain = try plainFile(RecordingTests.header + "\n" + samples.map { Recording.line(for: $0) }.joined())
        let reference = try Recording.read(path: plain)
        let compressed = try gzip(["-9", "-n", "-c"], input: plain)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: compressed))
        #expect(bytes.starts(with: [0x1f, 0x8b]))
        let read = try Recording.read(path: compressed)  // no .gz in the name: the magic tells
        #expect(read.header == reference.header)
        #expect(read.samples == reference.samples)
        #expect(read.samples == samples)
        // Two members one after the other (`cat a.gz b.gz`) are the two texts one after the other, as gunzip reads them.
        let tail = try plainFile(samples.suffix(3).map { Recording.line(for: $0) }.joined())
        let twoMembers = try plainFile("")
        try (bytes + Data(contentsOf: URL(fileURLWithPath: gzip(["-c"], input: tail)))).write(to: URL(fileURLWithPath: twoMembers))
        #expect(try Recording.read(path: twoMembers).samples == samples + samples.suffix(3))
    }

    @Test func theBundledRecordingReadsAsGunzipDecompressesIt() throws {
        let reference = try Recording.read(path: gzip(["-d", "-c"], input: Self.bundled))
        let read = try Recording.read(path: Self.bundled)
        #expect(read.header == reference.header)
        #expect(read.samples == reference.samples)
        // Seconds 30–60 of BROAD trial 04 (Recordings/README.md), accelerometer and gyroscope at 285.7 Hz.
        #expect(read.samples.count > 10_000)
    }

    /// A truncated or corrupt file is an error that names it, never a crash.
    @Test(arguments: ["truncated to 2 bytes", "truncated to half", "truncated by its last byte", "corrupt in the middle", "trailing garbage"])
    func aDamagedGzipFileSaysWhatIsWrongAndWhere(damage: String) throws {
        let plain = try plainFile(RecordingTests.header + "\n" + (0..<2_000).map { "accelerometer \($0) 0.\($0 * 7919 % 1000) 0 -1\n" }.joined())
        var bytes = try Data(contentsOf: URL(fileURLWithPath: gzip(["-9", "-n", "-c"], input: plain)))
        let expected: String
        switch damage {
        case "truncated to 2 bytes": bytes = bytes.prefix(2); expected = "ends early"
        case "truncated to half": bytes = bytes.prefix(bytes.count / 2); expected = "ends early"
        case "truncated by its last byte": bytes = bytes.dropLast(); expected = "ends early"
        case "corrupt in the middle":
            for i in bytes.count / 2..<bytes.count / 2 + 16 { bytes[bytes.startIndex + i] ^= 0x5a }
            expected = "corrupt compressed data"
        default: bytes.append(contentsOf: [0x0a, 0x0a, 0x0a]); expected = "not gzip"
        }
        let path = try plainFile("")
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect {
            try Recording.read(path: path)
        } throws: { error in
            "\(error)".hasPrefix(path) && "\(error)".contains("cannot decompress (gzip)") && "\(error)".contains(expected)
        }
    }

    /// A decompression bomb: 4 MiB of zeros compress (gzip -9) to about 4 kB; with a limit of 1 MiB it
    /// is refused with a sentence, not decompressed to the end. The limit for recordings is 1 GiB.
    @Test func aFileThatDecompressesBeyondTheLimitIsRefused() throws {
        let zeros = try plainFile(String(repeating: "\0", count: 4 << 20))
        let compressed = try [UInt8](Data(contentsOf: URL(fileURLWithPath: gzip(["-9", "-n", "-c"], input: zeros))))
        #expect(compressed.count < 64 << 10)
        #expect {
            try Gzip.decompress(compressed, limit: 1 << 20)
        } throws: { error in
            "\(error)".contains("more than 1048576 bytes")
        }
        #expect(try Gzip.decompress(compressed).count == 4 << 20)
    }
}
