import MotionSystem
import MotionWire

/// The clients' requests: each answered (or refused) in request order; a watch or a poll replans
/// what runs.
extension Hub {
    /// Serves `request` from `id`, if `id` is still served.
    package func handle(_ request: Request, from id: ClientID) {
        eventLoop.preconditionInEventLoop()
        guard serves(id) else { return }
        switch request {
        case .watch(let watch): handleWatch(watch, from: id)
        case .poll(let poll): handlePoll(poll, from: id)
        case .devices(let requestID): reply(Replies.devices(id: requestID, devices: devices, source: source), to: id)
        case .status(let requestID): reply(status(id: requestID), to: id)
        case .history(let query):
            reply(Replies.history(query, of: pipeline.gait.history, stepLength: pipeline.gait.stepLength, now: Syscall.realtimeNanoseconds()), to: id)
        }
    }

    func handleWatch(_ watch: Request.Watch, from id: ClientID) {
        let streams = watch.streams ?? Array(fanout.watches(of: id).keys)
        let interval = watch.interval ?? Request.Watch.defaultInterval
        if watch.enable == false {
            for stream in streams { fanout.setWatch(nil, of: stream, for: id) }
        } else {
            let latency = watch.latency ?? 0
            let plan = CapturePlan(
                demands: streams.map { .init(stream: $0, interval: interval, latency: latency) }, devices: devices, options: planOptions)
            guard plan.unavailable.isEmpty else {
                let reasons = CapturePlan.reasons(for: plan.unavailable, devices: devices, options: planOptions)
                return reply(ErrorReply(id: watch.id, code: .unavailable, message: reasons), to: id)
            }
            for stream in streams {
                let watch = StreamFanout.Watch(
                    interval: interval, frame: watch.frame ?? .xArbitraryZVertical, latency: latency, decimator: StreamDecimator(interval: interval))
                fanout.setWatch(watch, of: stream, for: id)
            }
        }
        let watching = fanout.watches(of: id).sorted { $0.key.rawValue < $1.key.rawValue }.map { stream, w in
            stream.isEventStream
                ? Watching.Stream(stream: stream)
                : Watching.Stream(stream: stream, interval: w.interval, frame: stream == .motion ? w.frame : nil, latency: w.latency > 0 ? w.latency : nil)
        }
        reply(Watching(id: watch.id, streams: watching), to: id)
        replan()
        // Event streams start with their state.
        guard watch.enable != false else { return }
        for stream in streams where stream.startsWithState {
            if let current = pipeline.latest(stream) { clients.send(current, to: id) }
        }
    }

    func handlePoll(_ poll: Request.Poll, from id: ClientID) {
        // A front end's request value, which no decoder checked, is refused as a line is.
        if let refusal = poll.momentRefusal { return reply(refusal, to: id) }
        let plan = CapturePlan(
            demands: poll.streams.map { .init(stream: $0, interval: Request.Watch.defaultInterval) }, devices: devices, options: planOptions)
        guard plan.unavailable.isEmpty else {
            let reasons = CapturePlan.reasons(for: plan.unavailable, devices: devices, options: planOptions)
            return reply(ErrorReply(id: poll.id, code: .unavailable, message: reasons), to: id)
        }
        polls.polled(poll.streams)
        if let snapshot = pipeline.snapshot(for: poll) { return reply(snapshot, to: id) }
        // The sensors were not running (or have given nothing yet): run them until the first sample.
        polls.wait(poll, from: id)
    }
}
