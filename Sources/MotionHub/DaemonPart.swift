/// One part of motiond: the hub, or a front end (the socket, D-Bus, MQTT, metrics, systemd's
/// notifications). `motiond` runs each as a swift-service-lifecycle `Service` of one `ServiceGroup`:
/// started after the parts before it, stopped before them; a part that fails to start stops those
/// that had started (MotionDaemon's `PartService`).
///
/// A front end reaches the hub through `Hub.connect(_:)` with a `ClientSink` (the hub writes it
/// the protocol's lines) and `Hub.handle(_:from:)` (it sends the protocol's requests): that is all
/// of the hub a front end needs. docs/architecture.md has how to add one.
package protocol DaemonPart: AnyObject, Sendable {
    /// What it is, for the log.
    var name: String { get }
    /// Starts it, blocking (it may wait for the hub's event loop; never called on it). Throws what kept
    /// it from starting, with nothing of it left running.
    func start() throws
    /// Stops it and waits until it has, blocking; called once, after a `start` that succeeded.
    func stop() throws
    /// Called from another thread while `start` runs, when the daemon is told to stop: a `start` that
    /// waits for something outside (a bus) returns at once, so that `stop` follows without delay.
    func interruptStart()
    /// Waits, after a `start` that succeeded, until the part fails for good (the daemon then stops,
    /// exiting with the error) or the task is cancelled (nil: the daemon is stopping). It must return
    /// promptly once its task is cancelled (a cancellation handler, not only a check between waits):
    /// at stop swift-service-lifecycle cancels it and waits for it to return before `stop` runs, so
    /// one that keeps waiting holds SIGTERM.
    func failure() async -> (any Error)?
}

extension DaemonPart {
    /// A part whose `start` never waits for anything outside has nothing to interrupt.
    package func interruptStart() {}

    /// A part that cannot fail once started waits for the daemon's stop.
    package func failure() async -> (any Error)? {
        let (never, keptOpen) = AsyncStream<Never>.makeStream()
        await withTaskCancellationHandler {
            for await _ in never {}
        } onCancel: {
            keptOpen.finish()
        }
        return nil
    }
}
