import MotionDevices
import NIOCore
import NIOPosix

/// How a `LoopCapture` opens its device: off the loop (libiio scans all of sysfs), then its readers
/// on the loop; a buffer that cannot be had falls back to polling, and what fails is told to the
/// lifecycle from the loop.
extension LoopCapture {
    func openBuffer() -> EventLoopFuture<Void> {
        let (device, kinds, rate, batch) = (device, kinds, rate, policy.batch)
        return eventLoop.runOnThreadOfItsOwn(named: "open \(device.number.sysname)") { [self] in
            // An opening the loop began (at start, or a re-arm's) as a stop came is not made after it returned.
            guard !lifecycle({ $0.isOver }) else { throw CancellationError() }
            return try ScanBuffer(device: device, kinds: kinds, rate: rate, watermark: batch)
        }.flatMap { [self] buffer in
            let reader = ScanReader(buffer: buffer, capture: self)
            // Room for the whole kernel buffer (a loop late by its slack drains it in one read); whole scans only.
            let capacity = max(buffer.scanSize, buffer.scanSize * buffer.length)
            return reader.attach(to: self, { () throws(DeviceError) in try buffer.makeReadDescriptor() }, readSize: capacity).map { [self] attached in
                guard attached else { return }
                for problem in buffer.problems { handler(.readFailed(problem)) }
                lifecycle { $0.opened() }
                reader.watch()
            }
        }.flatMapError { [self] error in
            let error = deviceError(error, "open")
            follow(lifecycle { $0.openFailed(error, deviceExists: !error.isVanished) })
            return eventLoop.makeSucceededVoidFuture()
        }
    }

    /// The buffer gave nothing, or could not be opened, or rests badly: the device is polled instead.
    func fallBackToPolling(because reason: DeviceError) {
        close { _ in true }
        handler(.captureModeChanged(.polled, reason: reason))
        opens(openPolling())
    }

    /// Polls the device on the loop from a timer, or, faster than the loop polls, on a thread of its own.
    func openPolling() -> EventLoopFuture<Void> {
        guard !Self.pollsOnLoop(rate: rate) else { return openPoller() }
        do {
            let poller = try ThreadPoller(capture: self)
            if keep(poller) { poller.start() }
        } catch {
            openFailedLater(error)
        }
        return eventLoop.makeSucceededVoidFuture()
    }

    /// An opening that failed before anything ran off the loop is told from the loop, as a failed
    /// future's is: told at once, its `ended` would reach the hub inside `start`, inside its replan.
    func openFailedLater(_ error: DeviceError) {
        eventLoop.execute { [self] in follow(lifecycle { $0.openFailed(error, deviceExists: true) }) }
    }

    private func openPoller() -> EventLoopFuture<Void> {
        let (device, kinds, rate) = (device, kinds, rate)
        let wantsEvents = lifecycle { $0.restsWhenStill }
        // The motion events where they are asked for, or why there are none.
        return eventLoop.runOnThreadOfItsOwn(named: "open \(device.number.sysname)") { [self] () throws -> (PolledSensors, Result<MotionEvents, DeviceError>?) in
            // A fallback the loop began as a stop came is not opened after that stop returned.
            guard !lifecycle({ $0.isOver }) else { throw CancellationError() }
            let poller = try PolledSensors(device: device, kinds: kinds, rate: rate)
            return (poller, wantsEvents ? Result { () throws(DeviceError) in try MotionEvents(device: device) } : nil)
        }.flatMap { [self] (poller, events) -> EventLoopFuture<Void> in
            let ticker = PollTicker(poller: poller, capture: self)
            return ticker.attach(to: self, { () throws(DeviceError) in try ticker.makeTimer() }, readSize: 64).flatMap { [self] attached in
                guard attached else {
                    try? events?.get().close()
                    return eventLoop.makeSucceededVoidFuture()
                }
                for problem in poller.problems { handler(.readFailed(problem)) }
                lifecycle { $0.opened() }
                switch events {
                case nil: return eventLoop.makeSucceededVoidFuture()
                case .failure(let refusal):
                    follow(lifecycle { $0.motionEventsRefused(refusal) })
                    return eventLoop.makeSucceededVoidFuture()
                case .success(let events): return MotionEventReader(events: events, ticker: ticker, capture: self).arm(for: self)
                }
            }
        }.flatMapError { [self] error in
            let error = deviceError(error, "poll")
            follow(lifecycle { $0.openFailed(error, deviceExists: !error.isVanished) })
            return eventLoop.makeSucceededVoidFuture()
        }
    }
}
