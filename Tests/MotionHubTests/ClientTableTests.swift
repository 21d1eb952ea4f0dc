import Logging
import MotionWire
import NIOCore
import NIOEmbedded
import Testing

@testable import MotionHub

/// The delivery rules that span a client's life, checked on the core alone: a recording sink in
/// place of a socket, and an embedded event loop whose clock the test moves, so no check depends on
/// how long anything took.
@Suite struct ClientTableTests {
    /// What the table did to one connection, in order.
    final class RecordingSink: ClientSink {
        var isWritable = true
        var written: [String] = []
        var flushes = 0
        var closed = false
        var closedAfterWrites = false
        var reading = true

        func write(_ line: ByteBuffer) { written.append(String(buffer: line)) }
        func flush() { flushes += 1 }
        func closeAfterWrites() { closedAfterWrites = true }
        func close() { closed = true }
        func setReading(_ reading: Bool) { self.reading = reading }

        /// The `class` of each line written.
        var classes: [String] { written.map { $0.split(separator: "\"")[3].description } }
    }

    let loop = EmbeddedEventLoop()
    let table: ClientTable
    let sink = RecordingSink()
    let id: ClientTable.ID

    init() {
        table = ClientTable(maximumClients: 2, eventLoop: loop, logger: Logger(label: "test"))
        id = table.add(sink)!
    }

    static func reply(_ number: Int64) -> ErrorReply { ErrorReply(id: .integer(number), code: .unknownRequest, message: "\(number)") }

    @Test func repliesToLaterRequestsWaitBehindAReplyStillOwed() {
        let slot = table[id]!.reserveReplySlot()
        table.reply(Self.reply(2), to: id)
        table.reply(Self.reply(3), to: id)
        #expect(sink.written.isEmpty, "nothing overtakes the owed reply")
        table.answer(slot: slot, with: Self.reply(1), to: id)
        #expect(sink.written.map { $0.contains("\"id\":1") ? 1 : $0.contains("\"id\":2") ? 2 : 3 } == [1, 2, 3])
    }

    @Test func writesDuringABatchGoOutInOneFlushAtItsEnd() {
        table.batch {
            for n: Int64 in 1...5 { table.reply(Self.reply(n), to: id) }
            #expect(sink.written.isEmpty)
        }
        #expect(sink.written.count == 5)
        #expect(sink.flushes == 1)
    }

    @Test func connectionsBeyondTheLimitAreRefused() {
        #expect(table.add(RecordingSink()) != nil)
        #expect(table.add(RecordingSink()) == nil, "the limit is 2")
        _ = table.remove(id)
        #expect(table.add(RecordingSink()) != nil, "a place freed is free")
    }

    /// A client that reads nothing gets no more pushes, so its check must come by itself: it is
    /// disconnected `stuckClientTimeout` after its queue filled with replies, not a moment before.
    @Test func aClientThatReadsNothingIsDisconnectedAfterTheStuckTimeout() {
        sink.isWritable = false
        for n in 0...Int64(ClientOutbox.capacity) { table.reply(Self.reply(n), to: id) }
        loop.advanceTime(by: ClientTable.stuckClientTimeout - .milliseconds(1))
        #expect(!sink.closed)
        loop.advanceTime(by: .milliseconds(1))
        #expect(sink.closed)
        #expect(!table.serves(id))
    }

    @Test func aClientThatReadsAgainIsNotDisconnected() {
        sink.isWritable = false
        for n in 0...Int64(ClientOutbox.capacity) { table.reply(Self.reply(n), to: id) }
        loop.advanceTime(by: .seconds(5))
        sink.isWritable = true
        table.flush(id)
        loop.advanceTime(by: .seconds(30))
        #expect(!sink.closed)
        #expect(sink.written.count == ClientOutbox.capacity + 1, "every reply arrives")
    }

    @Test func aClientAskingFasterThanItReadsIsDisconnectedAtTheFloodLimitAndItsReadingPaused() {
        sink.isWritable = false
        for n in 1...Int64(ClientOutbox.capacity) { table.reply(Self.reply(n), to: id) }
        table.pauseReadingIfCongested(id)
        #expect(!sink.reading, "a full queue stops reading its requests")
        for n in 1..<Int64(ClientOutbox.floodLimit - ClientOutbox.capacity) { table.reply(Self.reply(n), to: id) }
        #expect(!sink.closed)
        table.reply(Self.reply(0), to: id)
        #expect(sink.closed)
    }

    @Test func aClientWhoseInputEndedIsClosedOnceItHasEveryAnswer() {
        let slot = table[id]!.reserveReplySlot()
        table[id]!.waitingPolls = 1
        table[id]!.closesWhenAnswered = true
        table.flush(id)
        #expect(!sink.closedAfterWrites, "a poll is still owed")
        table[id]!.waitingPolls = 0
        table.answer(slot: slot, with: Self.reply(1), to: id)
        #expect(sink.written.count == 1)
        #expect(sink.closedAfterWrites)
    }
}
