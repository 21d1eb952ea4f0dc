import MotionWire

/// The clients' connections: registering, greeting, leaving, and the flow of their requests and
/// replies (each client's bounded queue is `ClientTable`'s).
extension Hub {
    /// Registers a new connection; `nil` when `maximumClients` are connected already.
    ///
    /// Registering does not write: the caller stores the id first and then `greet`s, because a write
    /// can fail at once (the peer already gone) and close the connection, whose `disconnect` must
    /// find the id.
    package func connect(_ sink: any ClientSink) -> ClientID? {
        eventLoop.preconditionInEventLoop()
        return clients.add(sink)
    }

    /// Registers an in-process front end, which takes every message as a value (`MessageSink`); `nil`
    /// when `maximumClients` are connected already.
    package func connect(_ receiver: any MessageSink) -> ClientID? {
        eventLoop.preconditionInEventLoop()
        return clients.add(receiver)
    }

    /// Sends the `VERSION` greeting.
    package func greet(_ id: ClientID) {
        eventLoop.preconditionInEventLoop()
        clients.send(Version(release: release), to: id)
    }

    /// The client will send nothing more (it shut down its writing side, as `socat` does at the end of
    /// its input): it gets the answers still owed to it, then the connection is closed.
    package func inputClosed(_ id: ClientID) {
        eventLoop.preconditionInEventLoop()
        guard let outbox = clients[id] else { return }
        outbox.closesWhenAnswered = true
        clients.flush(id)
    }

    /// Forgets `id` (its connection closed): its watches and waiting polls go, and the sensors that
    /// only it needed stop.
    package func disconnect(_ id: ClientID) {
        eventLoop.preconditionInEventLoop()
        guard let outbox = clients.remove(id) else { return }
        if outbox.heldManyBytes { memory.releaseFreeHeapSoon() }
        if outbox.waitingPolls > 0 { polls.removeAll(of: id) }
        if fanout.removeAll(of: id) { replan() }
    }

    /// Whether requests from `id` are still served (it is connected and not being disconnected).
    package func serves(_ id: ClientID) -> Bool { clients.serves(id) }

    /// Whether `id`'s next request may be served now: it is served, and its replies do not fill its
    /// queue (in lines or bytes). A front end holds the rest of a read until the queue drains and
    /// the client's `setReading(true)` says so, so that what one client asks is bounded by what it reads.
    package func acceptsRequests(_ id: ClientID) -> Bool { clients.acceptsRequests(id) }

    /// Runs `body` with every client's writes held until it ends (see `ClientTable.batch`).
    package func batch(_ body: () -> Void) {
        eventLoop.preconditionInEventLoop()
        clients.batch(body)
    }

    /// Sends a reply in request order.
    package func reply<M: ServerMessage>(_ message: M, to id: ClientID) {
        if M.self == ErrorReply.self { errorCounts[DaemonError.requestRefused.index] += 1 }
        clients.reply(message, to: id)
    }

    /// Writes what the client's connection takes now.
    package func flush(_ id: ClientID) {
        eventLoop.preconditionInEventLoop()
        clients.flush(id)
    }

    /// Stops reading a client's requests while it reads its replies too slowly.
    package func pauseReadingIfCongested(_ id: ClientID) {
        eventLoop.preconditionInEventLoop()
        clients.pauseReadingIfCongested(id)
    }
}
