import MotionCore
import MotionDevices
import MotionSystem
import NIOCore
import NIOPosix
import Synchronization

/// A buffered capture read on the hub's event loop: the IIO buffer's descriptor is one more NIO
/// channel beside the clients', so a batch of scans goes from the kernel to the clients' sockets on
/// one thread, for one wake-up (a capture thread would add its own wake-up and a hand-over per read).
///
/// The buffer is opened off the loop (libiio scans all of sysfs), then read as NIO reports it
/// readable: every `batch` scans, the buffer's watermark. If it cannot be opened, or gives no scan
/// within `firstDataTimeout`, the device is polled on a thread of its own instead (`SensorCapture`),
/// as a buffered `SensorCapture` would. Events go to the handler on the loop.
final class LoopCapture: SensorStream, @unchecked Sendable {
    // @unchecked: the mutable state is behind `state`; `handler` is set once before anything runs.
    let device: DeviceDescriptor
    let kinds: [SensorKind]
    let rate: Double
    /// Scans per read.
    let batch: Int
    private let eventLoop: any EventLoop
    private let firstDataTimeout: Double
    private let state = Mutex(State())
    private var handler: @Sendable (SensorEvent) -> Void = { _ in }

    private struct State {
        var stopped = false
        var buffer: ScanBuffer?
        var channel: (any Channel)?
        var polled: SensorCapture?
        /// Settled once the buffer is read or given up: `stop` waits for it.
        var opening: EventLoopFuture<Void>?
        var receivedAny = false
    }

    /// A capture of `kinds` of `device` at `rate` Hz (rounded up to what the device offers), read in
    /// batches of `batch` scans on `eventLoop`; `firstDataTimeout` in seconds (default 1 s or ten periods).
    init(device: DeviceDescriptor, kinds: [SensorKind], rate: Double, batch: Int, eventLoop: any EventLoop, firstDataTimeout: Double? = nil) {
        self.device = device
        self.kinds = kinds
        self.rate = device.availableRates?.rate(atLeast: rate) ?? rate
        self.batch = max(1, batch)
        self.eventLoop = eventLoop
        self.firstDataTimeout = firstDataTimeout ?? max(1.0, 10 / rate) + Double(batch) / rate
    }

    var modeName: String { state.withLock { $0.polled == nil } ? CaptureMode.buffered.rawValue : CaptureMode.polled.rawValue }

    /// Starts; `handler` gets every event on the event loop, each read's samples followed by `readComplete`.
    func start(handler: @escaping @Sendable (SensorEvent) -> Void) {
        self.handler = handler
        let (device, kinds, rate, batch) = (device, kinds, rate, batch)
        let opened = NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) {
            try ScanBuffer(device: device, kinds: kinds, rate: rate, watermark: batch)
        }.flatMap { [self] buffer in
            attach(buffer)
        }.flatMapErrorThrowing { [self] error in
            let error = error as? DeviceError ?? .bufferFailed(device: device.number.sysname, operation: "open", errno: ErrnoValue.invalidArgument)
            if case .deviceVanished = error {
                handler(.ended(error))
            } else {
                fallBackToPolling(because: error)
            }
        }
        state.withLock { $0.opening = opened }
    }

    /// Reads `buffer` through a channel of the loop's; fails if the capture was stopped meanwhile.
    private func attach(_ buffer: ScanBuffer) -> EventLoopFuture<Void> {
        eventLoop.preconditionInEventLoop()
        let stoppedAlready = state.withLock { state in
            if !state.stopped { state.buffer = buffer }
            return state.stopped
        }
        if stoppedAlready {
            buffer.close()
            return eventLoop.makeSucceededVoidFuture()
        }
        for problem in buffer.problems { handler(.readFailed(problem)) }
        let descriptor: Int32
        do {
            descriptor = try buffer.makeReadDescriptor()
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        // Whole scans per read, room for four batches: the kernel rounds a read down to whole scans.
        let capacity = buffer.scanSize * batch * ScanBuffer.lengthPerWatermark
        let reader = ScanReader(buffer: buffer, handler: handler, failed: { [weak self] error in self?.failed(error) })
        return NIOPipeBootstrap(group: eventLoop)
            .channelOption(ChannelOptions.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: max(capacity, buffer.scanSize)))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(reader) }
            }
            .takingOwnershipOfDescriptor(input: descriptor)
            .flatMapErrorThrowing { error in
                Syscall.close(descriptor)
                throw error
            }
            .map { [self] channel in
                let keep = state.withLock { state in
                    if !state.stopped { state.channel = channel }
                    return !state.stopped
                }
                if !keep { channel.close(promise: nil) }
                let timeout = TimeAmount.nanoseconds(Int64(firstDataTimeout * 1e9))
                eventLoop.scheduleTask(in: timeout) { [weak self, weak reader] in
                    guard let self, let reader, !reader.receivedAny else { return }
                    fallBackToPolling(because: .bufferFailed(device: device.number.sysname, operation: "first scan", errno: ErrnoValue.timedOut))
                }
            }
    }

    /// A read failed or the descriptor closed by itself: the capture ends, as unplugged if the device is gone.
    private func failed(_ error: any Error) {
        let (buffer, stopped) = state.withLock { ($0.buffer, $0.stopped) }
        guard !stopped, let buffer else { return }
        let name = device.number.sysname
        let reason: DeviceError = buffer.deviceExists
            ? .bufferFailed(device: name, operation: "read", errno: (error as? IOError)?.errnoCode ?? ErrnoValue.invalidArgument)
            : .deviceVanished(device: name)
        closeBuffer()
        handler(.ended(reason))
    }

    /// Closes the channel and the buffer, off the loop when called there not (the close waits for the loop).
    private func closeBuffer() {
        let (channel, buffer) = state.withLock { state in
            defer { (state.channel, state.buffer) = (nil, nil) }
            return (state.channel, state.buffer)
        }
        if eventLoop.inEventLoop {
            channel?.close(promise: nil)
        } else {
            try? channel?.close().wait()
        }
        buffer?.close()
    }

    /// The buffer gave nothing, or could not be opened: the device is polled instead.
    private func fallBackToPolling(because reason: DeviceError) {
        closeBuffer()
        let polled: SensorCapture
        do {
            polled = try SensorCapture(device: device, kinds: kinds, rate: rate, mode: .polled)
        } catch {
            handler(.ended(error))
            return
        }
        let proceed = state.withLock { state in
            if !state.stopped { state.polled = polled }
            return !state.stopped
        }
        guard proceed else { return }
        handler(.captureModeChanged(.polled, reason: reason))
        let mailbox = EventMailbox()
        let (eventLoop, handler) = (eventLoop, handler)
        polled.start { event in
            guard mailbox.post(event) else { return }
            eventLoop.execute {
                var events: [SensorEvent] = []
                mailbox.take(into: &events)
                for event in events { handler(event) }
                handler(.readComplete)
            }
        }
    }

    /// Stops reading and puts the device back; waits for an opening under way (but not on the loop,
    /// where it cannot finish: at shutdown, a buffer still being opened is closed by the opening itself).
    func stop() {
        let opening = state.withLock { state in
            state.stopped = true
            return state.opening
        }
        if !eventLoop.inEventLoop { _ = try? opening?.wait() }
        closeBuffer()
        state.withLock { $0.polled }?.stop()
    }
}

/// Decodes what NIO reads from an IIO buffer's descriptor; the samples of each wake-up are followed
/// by one `readComplete`. A partial scan (only a socket standing in for the device splits one) waits
/// for the rest.
private final class ScanReader: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: runs on its channel's event loop only.
    typealias InboundIn = ByteBuffer

    private let buffer: ScanBuffer
    private let handler: @Sendable (SensorEvent) -> Void
    private let failed: (any Error) -> Void
    private var partial: ByteBuffer?
    private var rejections = RejectionReport()
    private(set) var receivedAny = false

    init(buffer: ScanBuffer, handler: @escaping @Sendable (SensorEvent) -> Void, failed: @escaping (any Error) -> Void) {
        self.buffer = buffer
        self.handler = handler
        self.failed = failed
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        let now = Syscall.monotonicNanoseconds()
        receivedAny = true
        if var carried = partial {
            carried.writeBuffer(&bytes)
            bytes = carried
            partial = nil
        }
        let used = bytes.withUnsafeReadableBytes { raw in
            buffer.decode(raw, receivedAt: now) { handler(.sample($0)) }
        }
        bytes.moveReaderIndex(forwardBy: used)
        if bytes.readableBytes > 0 { partial = bytes }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        rejections.report(total: buffer.rejectedReadings, device: buffer.device.number.sysname, kinds: buffer.kinds, to: handler)
        handler(.readComplete)
    }

    func channelInactive(context: ChannelHandlerContext) {
        failed(ChannelError.eof)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failed(error)
        context.close(promise: nil)
    }
}
