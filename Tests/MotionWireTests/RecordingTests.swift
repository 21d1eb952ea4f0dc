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
