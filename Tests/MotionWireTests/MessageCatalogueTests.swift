import Foundation
import MotionCore
import Testing

@testable import MotionWire

/// Every stream of the catalogue (`StreamKind.descriptor`) is known wherever a stream's message is
/// read or written: the wire's encoders and decoder, the snapshot, the spec's examples and the Python
/// client (the browser view: MotionctlTests' MessageCatalogueViewTests, which runs view.js). A stream
/// added to the catalogue and missed in one of them fails here, naming it.
@Suite struct MessageCatalogueTests {
    /// A file of the package, by its path from the package's root.
    static func text(_ path: String) throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../" + path).standardized
        return try String(contentsOf: url, encoding: .utf8)
    }

    /// docs/protocol.md's first complete example line of the class `name`, as the daemon sends it.
    static func example(of name: String) throws -> String? {
        try text("docs/protocol.md").split(separator: "\n").lazy.map { $0.hasPrefix("< ") ? $0.dropFirst(2) : $0 }
            .first { $0.hasPrefix("{\"class\":\"\(name)\"") && !$0.contains("…") }.map(String.init)
    }

    /// What the Python client makes of each stream's line (`[stream, line]`): for each, what is wrong,
    /// nothing when `SAMPLE_CLASSES` files the line's class under the stream, `sample_from_wire` reads
    /// every field of it, and `Snapshot` has the stream's field.
    static func pythonProblems(_ lines: [[String]]) throws -> [[String]] {
        let script = """
            import dataclasses, json, sys
            sys.path.insert(0, sys.argv[1])
            from motiond.samples import SAMPLE_CLASSES, Snapshot, sample_from_wire
            problems = []
            for stream, line in json.loads(sys.argv[2]):
                message, wrong = json.loads(line), []
                name, entry = message["class"], SAMPLE_CLASSES.get(message["class"])
                if entry is None or entry[0] != stream:
                    wrong.append(f"SAMPLE_CLASSES has {entry!r} for {name}, not the stream {stream!r}")
                else:
                    try:
                        sample = sample_from_wire(message)
                        lost = set(message) - {"class"} - {f.name for f in dataclasses.fields(sample)}
                        if lost:
                            wrong.append(f"{type(sample).__name__} has no field for {sorted(lost)}")
                    except Exception as error:
                        wrong.append(f"sample_from_wire raised {error!r}")
                if stream not in {f.name for f in dataclasses.fields(Snapshot)}:
                    wrong.append(f"Snapshot has no field {stream}")
                problems.append(wrong)
            print(json.dumps(problems))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let client = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../clients/python").standardized
        let input = String(decoding: try JSONEncoder().encode(lines), as: UTF8.self)
        process.arguments = ["python3", "-c", script, client.path, input]
        let output = Pipe()
        process.standardOutput = output
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "python3 on clients/python: \(said)")
        return try JSONDecoder().decode([[String]].self, from: printed)
    }

    @Test func theListsOfClassesNameEachClassOnceAndEachStreamItsOwn() {
        let names = AnyServerMessage.allClasses.map(\.name)
        #expect(Set(names).count == names.count, "\(names)")
        for stream in StreamKind.allCases {
            #expect(StreamKind(messageType: stream.descriptor.message.type) == stream, "\(stream)'s message is another stream's")
        }
        for reply in AnyServerMessage.replies { #expect(StreamKind(messageType: reply.type) == nil, "\(reply.name) is a stream's") }
    }

    @Test(arguments: StreamKind.allCases)
    func theWireWritesAndReadsBackTheStreamsMessage(_ stream: StreamKind) throws {
        let name = stream.descriptor.message.name
        let line = try #require(try Self.example(of: name), "docs/protocol.md has no example of \(name), the \(stream) stream's message")
        let read = try AnyServerMessage(line: Array(line.utf8))
        #expect(read.stream == stream, "\(name) reads as \(read), not as the \(stream) stream's message")
        let message = try #require(read.message, "\(stream): \(name) is not decoded")
        #expect(AnyServerMessage(message) == read, "\(stream): its message does not become its case")
        #expect(try AnyServerMessage(line: Wire.encode(message)) == read, "\(stream): Wire.encode's line reads back otherwise")
        var writer = LineWriter()
        if writer.write(read) { #expect(try AnyServerMessage(line: writer.bytes) == read, "\(stream): LineWriter's line reads back otherwise") }

        var snapshot = Snapshot(id: .integer(1))
        snapshot.insert(read)
        #expect(snapshot[stream] == read)
        let polled = try Wire.encode(snapshot)
        #expect(String(decoding: polled, as: UTF8.self).contains("\"\(stream.rawValue)\":{"), "\(stream) is not under its name")
        guard case .snapshot(let back) = try AnyServerMessage(line: polled) else {
            Issue.record("\(stream): a SNAPSHOT does not read back as one")
            return
        }
        #expect(back == snapshot, "\(stream): a SNAPSHOT holding it reads back otherwise")
    }

    @Test func thePythonClientReadsEveryStreamsLine() throws {
        let lines = try StreamKind.allCases.map { stream in
            [stream.rawValue, try #require(try Self.example(of: stream.descriptor.message.name), "docs/protocol.md has no example of \(stream)")]
        }
        let problems = try Self.pythonProblems(lines)
        try #require(problems.count == lines.count, "clients/python: \(problems)")
        for (stream, wrong) in zip(StreamKind.allCases, problems) {
            #expect(wrong.isEmpty, "clients/python/motiond/samples.py, the \(stream) stream: \(wrong.joined(separator: "; "))")
        }
    }
}
