import MotionDevices
import MotionSystem
import NIOCore

/// Reads an accelerometer's motion events (`iio_event_data` records) through a channel of the loop's
/// and tells the poller of each read that brought one of them, which reads at once only where no read
/// is due sooner: the samples themselves come from the poller's reads. Armed, refused and failed, it
/// reports to the capture's lifecycle, which says how the capture rests.
final class MotionEventReader: ChannelReader, @unchecked Sendable {
    // @unchecked: reads on its channel's event loop only; `close` touches only what is thread-safe.
    typealias InboundIn = ByteBuffer

    private let events: MotionEvents
    private weak var ticker: PollTicker?
    private(set) weak var capture: LoopCapture?
    let channel = ReadingChannel()
    private var moved = false

    init(events: MotionEvents, ticker: PollTicker, capture: LoopCapture) {
        self.events = events
        self.ticker = ticker
        self.capture = capture
    }

    /// Reads the events from now: `capture` (its own) rests on them, or, if they cannot be read, polls
    /// slowly at rest.
    func arm(for capture: LoopCapture) -> EventLoopFuture<Void> {
        let device = events.device
        return attach(to: capture, { () throws(DeviceError) in
            guard let descriptor = events.takeDescriptor() else {
                throw .eventsRefused(device: device, operation: "read", errno: ErrnoValue.badDescriptor)
            }
            return descriptor
        }, readSize: IIOEventRecord.size * 16).map { wanted in
            guard wanted else { return }
            capture.follow(capture.lifecycle { $0.motionEventsArmed() })
        }.flatMapError { error in
            let refusal = capture.deviceError(error, "read", DeviceError.eventsRefused)
            // The lifecycle's adaptive polling closes this reader.
            capture.follow(capture.lifecycle { $0.motionEventsRefused(refusal) })
            return capture.eventLoop.makeSucceededVoidFuture()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        // Whole records only: the kernel hands out nothing less. Other devices' events cannot come here.
        bytes.withUnsafeReadableBytes { raw in
            var offset = 0
            while let record = IIOEventRecord(UnsafeRawBufferPointer(rebasing: raw[offset...])) {
                moved = moved || record.isAccelerometer
                offset += IIOEventRecord.size
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard moved else { return }
        moved = false
        ticker?.motionReported()
    }

    /// The events failed, or their descriptor closed: given up, if the capture rested on them.
    func channelEnded(_ error: any Error) {
        guard let capture else { return }
        let failure = capture.deviceError(error, "read", DeviceError.eventsRefused)
        capture.follow(capture.lifecycle { $0.motionEventsFailed(failure) })
    }

    func close(waiting: Bool) {
        channel.close(waiting: waiting)
        events.close()
    }
}
