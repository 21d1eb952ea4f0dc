import Logging
import MotionWire
import NIOEmbedded
import Testing

@testable import MotionHub

/// A message the hub cannot encode or hand on is logged, never dropped in silence: one of a type that
/// neither of `AnyServerMessage`'s lists of classes names (the streams' catalogue, the replies).
@Suite struct UncataloguedMessageTests {
    struct Unlisted: ServerMessage {
        static let className = "UNLISTED"
        var value = 1
    }

    @Test func aMessageOfATypeNoListNamesIsLoggedAndNotSent() {
        let log = LogLines()
        let table = ClientTable(maximumClients: 1, eventLoop: EmbeddedEventLoop(), logger: Logger(label: "test") { _ in log })
        let sink = ClientTableTests.RecordingSink()
        let id = table.add(sink)!
        table.send(Unlisted(), to: id)
        table.reply(Unlisted(), to: id)
        #expect(sink.written.isEmpty)
        #expect(log.lines.filter { $0.hasPrefix("error cannot send UNLISTED") }.count == 2, "\(log.lines)")
    }

    @Test func aListedMessageIsSent() {
        let table = ClientTable(maximumClients: 1, eventLoop: EmbeddedEventLoop(), logger: Logger(label: "test"))
        let sink = ClientTableTests.RecordingSink()
        let id = table.add(sink)!
        table.send(Ended(stream: .hinge, reason: "gone"), to: id)
        #expect(sink.classes == ["ENDED"])
    }
}
