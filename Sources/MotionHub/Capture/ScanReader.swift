import MotionCore
import MotionDevices
import MotionSystem
import NIOCore

/// Reads a capture's IIO buffer through a channel of the loop's: decodes what NIO reads, the samples
/// of each wake-up followed by one `readComplete`; a partial scan (only a socket standing in for the
/// device splits one) waits for the rest. Checks the buffer when the lifecycle says, and for a
/// resting HID hub runs its `HysteresisProbe`.
final class ScanReader: ChannelReader, @unchecked Sendable {
    // @unchecked: reads on its channel's event loop only; `close` touches only what is thread-safe.
    typealias InboundIn = ByteBuffer

    let buffer: ScanBuffer
    private(set) weak var capture: LoopCapture?
    let channel = ReadingChannel()
    private let handler: @Sendable (SensorEvent) -> Void
    private var partial: ByteBuffer?
    private var rejections: RejectionReport
    /// The hysteresis trial of a resting accelerometer's buffer.
    private var probe: HysteresisProbe?

    init(buffer: ScanBuffer, capture: LoopCapture) {
        self.buffer = buffer
        self.capture = capture
        handler = capture.handler
        rejections = RejectionReport(device: buffer.device.number.sysname, kinds: buffer.kinds)
        // A buffered capture that rests is a hub's, whose hysteresis is tried.
        if capture.lifecycle({ $0.restsWhenStill }) { probe = HysteresisProbe(reader: self) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        let now = Syscall.monotonicNanoseconds()
        capture?.lifecycle { $0.readSucceeded() }
        if var carried = partial {
            carried.writeBuffer(&bytes)
            bytes = carried
            partial = nil
        }
        let used = bytes.withUnsafeReadableBytes { raw in
            buffer.decode(raw, receivedAt: now) { sample in
                probe?.observe(sample)
                handler(.sample(sample))
            }
        }
        bytes.moveReaderIndex(forwardBy: used)
        // Less than a scan waits for the rest; nothing more can be owed (a closed buffer has no scan size).
        if bytes.readableBytes > 0, bytes.readableBytes < buffer.scanSize { partial = bytes }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        rejections.report(total: buffer.rejectedReadings, to: handler)
        handler(.readComplete)
    }

    func channelEnded(_ error: any Error) {
        capture?.readingEnded(self, error: error, deviceExists: buffer.deviceExists)
    }

    /// Checks the buffer after the policy's `firstDataTimeout`, then every `checkDelay`, as the
    /// lifecycle says (no first scan: polled instead; silent and gone: ended). Sparse, as each check
    /// can be a wake-up of its own (a batch of 0.1 s at 100 Hz wakes the loop 10 times a second; this
    /// adds one every 2 s; a hub silent at rest, one a heartbeat).
    func watch(after delay: Double? = nil) {
        guard let capture else { return }
        capture.eventLoop.scheduleTask(in: .nanoseconds(Int64(saturating: (delay ?? capture.policy.firstDataTimeout) * 1e9))) { [weak self] in
            guard let self, let capture = self.capture, capture.reads(self) else { return }
            switch capture.lifecycle({ $0.checkDue(deviceExists: buffer.deviceExists) }) {
            case .proceed, .report: watch(after: capture.lifecycle { $0.checkDelay })
            case let action: capture.follow(action)
            }
        }
    }

    func close(waiting: Bool) {
        channel.close(waiting: waiting)
        buffer.close()
    }
}
