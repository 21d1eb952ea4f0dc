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

    /// A reply of `bytes` bytes (a week's HISTORY of activities is 79 KB).
    static func reply(_ number: Int64, bytes: Int) -> ErrorReply {
        ErrorReply(id: .integer(number), code: .unknownRequest, message: String(repeating: "x", count: bytes))
    }

    /// Issue 40, defect 3: replies were bounded in lines only, so 250 week-long HISTORY replies (20 MB)
    /// queued for a client that read none, and nothing paused it. Four 80 KB replies fill its queue:
    /// it takes no more requests, and its reading stops.
    @Test func repliesFillAQueueByTheirBytesAndItsRequestsWait() {
        sink.isWritable = false
        for n: Int64 in 1...3 { table.reply(Self.reply(n, bytes: 80_000), to: id) }
        #expect(table.acceptsRequests(id), "240 KB: under the 256 KB the queue holds")
        table.reply(Self.reply(4, bytes: 80_000), to: id)
        #expect(!table.acceptsRequests(id))
        table.pauseReadingIfCongested(id)
        #expect(!sink.reading)
        // It reads: the queue drains and its requests are taken again.
        sink.isWritable = true
        table.flush(id)
        #expect(table.acceptsRequests(id) && sink.reading && sink.written.count == 4)
    }

    /// Issue 40, defect 3: the stuck check began only once 256 lines waited, so a client holding 250
    /// unread replies was never disconnected. It now runs whenever a reply waits: one is enough.
    @Test func aClientThatLeavesOneReplyUnreadIsDisconnectedAfterTheStuckTimeout() {
        sink.isWritable = false
        table.reply(Self.reply(1), to: id)
        loop.advanceTime(by: ClientTable.stuckClientTimeout - .milliseconds(1))
        #expect(!sink.closed)
        loop.advanceTime(by: .milliseconds(1))
        #expect(sink.closed)
    }

    /// A client that reads slowly but reads is not stuck: each check finds progress and looks again.
    @Test func aClientThatReadsSlowlyIsCheckedAgainNotDisconnected() {
        sink.isWritable = false
        for n: Int64 in 1...3 { table.reply(Self.reply(n), to: id) }
        for n: Int64 in 4...8 {
            // Every 6 s it reads what waits; by then a new reply waits.
            loop.advanceTime(by: .seconds(6))
            sink.isWritable = true
            table.flush(id)
            sink.isWritable = false
            table.reply(Self.reply(n), to: id)
        }
        #expect(!sink.closed && sink.written.count == 7)
        // Once it stops reading, it goes within two timeouts of its last read.
        loop.advanceTime(by: ClientTable.stuckClientTimeout * 2)
        #expect(sink.closed)
    }

    /// Events pushed to a client that reads none cannot grow its queue past `floodBytes`.
    @Test func aClientSentMoreBytesThanTheFloodLimitIsDisconnected() {
        sink.isWritable = false
        let each = 64 * 1024
        for n in 0..<Int64(ClientOutbox.floodBytes / each - 1) { table.send(Self.reply(n, bytes: each - 60), to: id) }
        #expect(!sink.closed)
        table.send(Self.reply(0, bytes: each), to: id)
        #expect(sink.closed)
    }
}
