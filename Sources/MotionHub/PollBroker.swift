import MotionCore
import MotionWire
import NIOCore

/// POLLs whose sensors have given nothing yet: each waits, in its client's reply order, for the
/// first snapshot or `pollTimeout`; and the sensors of polled streams keep running for `pollLinger`
/// after the last poll, so that polling in a loop does not open and close them each time.
final class PollBroker: @unchecked Sendable {
    // @unchecked: confined to the hub's event loop, as the closures it schedules there are.
    typealias ID = ClientOutbox.ID

    /// POLLs one client may have waiting for their sensors at once.
    static let maximumWaitingPolls = 32
    /// How long a POLL waits for the first sample.
    static let pollTimeout = TimeAmount.seconds(2)
    /// How long sensors started for a POLL keep running after the last poll that needs them.
    static let pollLinger = TimeAmount.seconds(5)

    private struct Pending {
        var client: ID
        var poll: Request.Poll
        /// Its place among the client's replies.
        var slot: Int
        var timeout: Scheduled<Void>
    }

    private let clients: ClientTable
    private let eventLoop: any EventLoop
    /// Called when what the sensors must give changed: a poll began waiting, timed out or lingers no more.
    var demandsChanged: () -> Void = {}
    /// By their number, which keeps each unique however many come and go.
    private var pending: [Int: Pending] = [:]
    private var nextNumber = 0
    /// Streams polled lately, and until when their sensors keep running.
    private var recent: [StreamKind: NIODeadline] = [:]
    private var lingerEnd: Scheduled<Void>?

    init(clients: ClientTable, eventLoop: any EventLoop) {
        self.clients = clients
        self.eventLoop = eventLoop
    }

    /// The streams polled lately, whose sensors keep running. Waiting polls need nothing more: their
    /// streams are among these until after they time out.
    func demands() -> [CapturePlan.Demand] {
        let now = eventLoop.now
        recent = recent.filter { $0.value > now }
        return recent.keys.map { .init(stream: $0, interval: Request.Watch.defaultInterval) }
    }

    /// Notes a poll of `streams`: their sensors keep running for `pollLinger`.
    func polled(_ streams: [StreamKind]) {
        let end = eventLoop.now + Self.pollLinger
        for stream in streams { recent[stream] = end }
        lingerEnd?.cancel()
        lingerEnd = eventLoop.scheduleTask(deadline: end) { [self] in
            lingerEnd = nil
            demandsChanged()
        }
    }

    /// Makes `poll` wait for its sensors' first sample, its answer in the client's reply order.
    func wait(_ poll: Request.Poll, from id: ID) {
        guard let outbox = clients[id] else { return }
        guard outbox.waitingPolls < Self.maximumWaitingPolls else {
            let message = "\(Self.maximumWaitingPolls) polls are waiting already; wait for their answers"
            clients.reply(ErrorReply(id: poll.id, code: .unavailable, message: message), to: id)
            return
        }
        let slot = outbox.reserveReplySlot()
        nextNumber += 1
        let number = nextNumber
        let timeout = eventLoop.scheduleTask(in: Self.pollTimeout) { [self] in
            guard let expired = pending.removeValue(forKey: number) else { return }
            clients[id]?.waitingPolls -= 1
            let seconds = Double(Self.pollTimeout.nanoseconds) / 1e9
            clients.answer(slot: slot, with: ErrorReply(id: expired.poll.id, code: .timeout, message: "no sample in \(seconds) s"), to: id)
            clients.closeAnswered()
            demandsChanged()
        }
        pending[number] = Pending(client: id, poll: poll, slot: slot, timeout: timeout)
        outbox.waitingPolls += 1
        demandsChanged()
    }

    /// Answers each waiting poll that `snapshot` can answer now. Returns whether any was.
    func answerReady(_ snapshot: (Request.Poll) -> Snapshot?) -> Bool {
        guard !pending.isEmpty else { return false }
        var answered = false
        for (number, waiting) in pending {
            guard let reply = snapshot(waiting.poll) else { continue }
            waiting.timeout.cancel()
            pending[number] = nil
            clients[waiting.client]?.waitingPolls -= 1
            clients.answer(slot: waiting.slot, with: reply, to: waiting.client)
            answered = true
        }
        if answered { clients.closeAnswered() }
        return answered
    }

    /// Drops the polls of a client that disconnected.
    func removeAll(of id: ID) {
        for (number, waiting) in pending where waiting.client == id {
            waiting.timeout.cancel()
            pending[number] = nil
        }
    }

    /// Lets every polled sensor stop (at shutdown).
    func stop() {
        lingerEnd?.cancel()
        recent.removeAll()
    }
}
