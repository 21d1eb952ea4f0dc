import MotionDevices
import MotionSystem
import NIOCore
import NIOPosix
import Synchronization

/// One of a `LoopCapture`'s readers: it reads the device, or its events, through a channel of the
/// loop's or on a thread, reports what happens to the capture's lifecycle, and does what it answers.
protocol CaptureReader: AnyObject, Sendable {
    /// Stops reading and closes what it reads; `waiting`: until it is closed (never on the loop).
    func close(waiting: Bool)
}

/// A reader whose descriptor a channel of the capture's loop reads, the reader being its handler.
protocol ChannelReader: CaptureReader, ChannelInboundHandler where InboundIn == ByteBuffer {
    /// The channel, once registered.
    var channel: ReadingChannel { get }
    /// The channel ended by itself: an error, or the descriptor closed.
    func channelEnded(_ error: any Error)
}

extension ChannelReader {
    /// Keeps the reader among `capture`'s (its own), then reads the descriptor `open` gives through a
    /// channel of the capture's loop, in reads of `readSize` bytes. The future says whether the capture
    /// still wants it (else it is closed); it fails with what kept the descriptor from being read.
    func attach(to capture: LoopCapture, _ open: () throws(DeviceError) -> OwnedDescriptor, readSize: Int) -> EventLoopFuture<Bool> {
        guard capture.keep(self) else { return capture.eventLoop.makeSucceededFuture(false) }
        let descriptor: Int32
        do {
            // Handed to NIO, which closes it with the channel (`take`): it refuses one only before the
            // channel is made, for a regular file or one `fcntl` cannot make non-blocking, which a
            // timerfd, an IIO buffer's or event descriptor is not; after that, on any failure, NIO
            // closes it itself, so closing it here too would close it twice.
            descriptor = try open().take()
        } catch {
            return capture.eventLoop.makeFailedFuture(error)
        }
        return readingChannel(of: descriptor, on: capture.eventLoop, readSize: readSize, handler: self) { [weak self] error in self?.channelEnded(error) }
            .flatMapErrorThrowing { error in
                guard let errno = error as? Errno else { throw error }
                throw DeviceError.bufferFailed(device: capture.device.number.sysname, operation: "read descriptor \(descriptor)", errno: errno.rawValue)
            }
            .map { [self] channel in self.channel.attach(channel) }
    }
}

/// A channel of `eventLoop`'s reading `descriptor` (NIO's from now on: it closes it with the channel)
/// in reads of `readSize` bytes, `handler` taking them and `ended` told of an error or the descriptor's
/// end (`ChannelEnd`). Fails with the `Errno` of a descriptor that is not open: NIO traps on one (its
/// `fstat` precondition), and a driver, or an ioctl answered by something other than the kernel, may
/// hand one out.
func readingChannel(
    of descriptor: Int32, on eventLoop: any EventLoop, readSize: Int, handler: some ChannelInboundHandler & Sendable,
    ended: @escaping @Sendable (any Error) -> Void
) -> EventLoopFuture<any Channel> {
    if let error = Syscall.checkOpen(descriptor) { return eventLoop.makeFailedFuture(error) }
    return NIOPipeBootstrap(group: eventLoop)
        .channelOption(ChannelOptions.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: readSize))
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandlers(handler, ChannelEnd(ended)) }
        }
        .takingOwnershipOfDescriptor(input: descriptor)
}

/// The channel a reader reads through: set once registered, closable from any thread; one that comes
/// after its reader was closed is closed as it comes.
final class ReadingChannel: Sendable {
    private let state = Mutex<(channel: (any Channel)?, closed: Bool)>((nil, false))

    /// Keeps `channel`; returns false, and closes it, if the reader was closed meanwhile.
    func attach(_ channel: any Channel) -> Bool {
        let open = state.withLock { state in
            if !state.closed { state.channel = channel }
            return !state.closed
        }
        if !open { channel.close(promise: nil) }
        return open
    }

    /// Closes the channel (`waiting`: until it is closed; never on its loop).
    func close(waiting: Bool) {
        let channel = state.withLock { state in
            defer { state = (nil, true) }
            return state.channel
        }
        if waiting { try? channel?.close().wait() } else { channel?.close(promise: nil) }
    }
}

/// The last handler of a reader's channel: an error, or the descriptor closing by itself, is the
/// reader's end (`ChannelReader.channelEnded`).
final class ChannelEnd: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: runs on its channel's event loop only.
    typealias InboundIn = ByteBuffer

    private let ended: (any Error) -> Void

    init(_ ended: @escaping (any Error) -> Void) { self.ended = ended }

    func channelInactive(context: ChannelHandlerContext) { ended(ChannelError.eof) }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ended(error)
        context.close(promise: nil)
    }
}
