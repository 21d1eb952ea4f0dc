import Foundation
import MotionCore
import Testing

@testable import MotionWire

/// Every stream of the catalogue (`StreamKind.descriptor`) is known wherever a stream's message is
/// read or written: the wire's encoders and decoder, the snapshot, the spec's examples, the Python
/// client and the browser view. A stream added to the catalogue and missed in one of them fails
/// here, naming it.
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

    /// The Python client's `SAMPLE_CLASSES`: each class's field of `Snapshot`.
    static func pythonClasses() throws -> [String: String] {
        let source = try text("clients/python/motiond/samples.py")
        return Dictionary(source.matches(of: /"([A-Z_]+)": \("(\w+)", \w+\)/).map { (String($0.1), String($0.2)) }, uniquingKeysWith: { first, _ in first })
    }

    /// The fields of the Python client's `Snapshot` (its class body ends at the two blank lines PEP 8 puts after it).
    static func pythonSnapshotFields() throws -> Set<String> {
        let source = try text("clients/python/motiond/samples.py")
        guard let start = source.firstRange(of: "\nclass Snapshot:\n") else { return [] }
        let body = source[start.upperBound...].split(separator: "\n\n\n", maxSplits: 1).first ?? ""
        return Set(body.matches(of: /\n    (\w+): Optional\[/).map { String($0.1) })
    }

    /// The classes view.js's `take` has a case for.
    static func viewClasses() throws -> Set<String> {
        Set(try text("share/view/view.js").matches(of: /case '([A-Z_]+)':/).map { String($0.1) })
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

    @Test(arguments: StreamKind.allCases)
    func thePythonClientKnowsTheStream(_ stream: StreamKind) throws {
        let name = stream.descriptor.message.name
        #expect(try Self.pythonClasses()[name] == stream.rawValue, "clients/python/motiond/samples.py: SAMPLE_CLASSES has no \"\(name)\": (\"\(stream.rawValue)\", …)")
        #expect(try Self.pythonSnapshotFields().contains(stream.rawValue), "clients/python/motiond/samples.py: Snapshot has no field \(stream.rawValue)")
    }

    @Test(arguments: StreamKind.allCases)
    func theBrowserViewKnowsTheStream(_ stream: StreamKind) throws {
        let name = stream.descriptor.message.name
        #expect(try Self.viewClasses().contains(name), "share/view/view.js: take() has no case '\(name)' for the \(stream) stream")
    }
}
