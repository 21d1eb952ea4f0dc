import Logging
import MotionSystem
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The daemon's signals, read from a signalfd on its one event loop: SIGTERM and SIGINT end `run`,
/// which shuts the service group down gracefully (`ServiceGroupConfiguration`'s
/// `.gracefullyShutdownGroup`), and each SIGHUP is passed on to `hangups` (`ConfigurationReload`).
///
/// Not swift-service-lifecycle's `UnixSignalsSequence`: that one reads signals through libdispatch's
/// signal sources, whose manager thread (and a worker, for a while after each signal) would be one of
/// the daemon's four threads at rest (issue 63), for three signals the loop can read itself.
public final class SignalService: Service {
    /// The signals that stop the daemon.
    public static let stopping: [Int32] = [SIGTERM, SIGINT]
    /// The signals it reads.
    public static let signals = stopping + [SIGHUP]

    /// Blocks `signals` in the calling thread and in every thread it makes afterwards: call it first in
    /// `main`, before any thread is made. From here on none of them takes its default action (a
    /// reload sent before the socket exists does not terminate); they wait, pending, until `run`
    /// reads them.
    public static func blockSignals() -> Errno? {
        if case .failure(let error) = Syscall.blockSignals(signals) { return error }
        return nil
    }

    /// One per SIGHUP received, from the first; ends when `run` does.
    public let hangups: AsyncStream<Void>
    private let hangup: AsyncStream<Void>.Continuation
    /// The signalfd, until `run` hands it to its channel.
    private let descriptor: Mutex<OwnedDescriptor?>
    private let eventLoop: any EventLoop
    private let logger: Logger

    /// Opens the signalfd of `signals` (blocked first by `blockSignals`, from `main`; those that came
    /// since are read from it), to be read on `eventLoop`; throws the errno of `sigprocmask` or `signalfd`.
    public init(eventLoop: any EventLoop, logger: Logger) throws(Errno) {
        self.eventLoop = eventLoop
        descriptor = Mutex(try Syscall.makeSignalDescriptor(for: Self.signals))
        (hangups, hangup) = AsyncStream.makeStream()
        self.logger = logger
    }

    /// Reads the signals on its loop until SIGTERM or SIGINT, or until the group shuts down for another
    /// reason; runs once.
    public func run() async throws {
        defer { hangup.finish() }
        guard let descriptor = descriptor.withLock({ $0.take() }) else { return }
        let (signals, arrivals) = AsyncStream<Int32>.makeStream()
        let channel = try await NIOPipeBootstrap(group: eventLoop)
            // Whole `signalfd_siginfo` records only: the kernel never splits one.
            .channelOption(ChannelOptions.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: SignalRecords.size * 8))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(SignalRecords(arrivals)) }
            }
            .takingOwnershipOfDescriptor(input: descriptor.take())
            .get()
        defer { channel.close(promise: nil) }
        for await signal in signals.cancelOnGracefulShutdown() {
            guard signal == SIGHUP else {
                logger.notice("stopping", metadata: ["signal": "\(signal == SIGTERM ? "SIGTERM" : signal == SIGINT ? "SIGINT" : "\(signal)")"])
                return
            }
            hangup.yield()
        }
    }
}

/// Decodes the `signalfd_siginfo` records a signalfd reads (signalfd(2): 128 bytes each, the signal's
/// number first, a `uint32_t`) into signal numbers.
private final class SignalRecords: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    /// `sizeof(struct signalfd_siginfo)`.
    static let size = 128

    private let arrivals: AsyncStream<Int32>.Continuation

    init(_ arrivals: AsyncStream<Int32>.Continuation) { self.arrivals = arrivals }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var records = unwrapInboundIn(data)
        while records.readableBytes >= Self.size, let number = records.getInteger(at: records.readerIndex, endianness: .host, as: UInt32.self) {
            arrivals.yield(Int32(bitPattern: number))
            records.moveReaderIndex(forwardBy: Self.size)
        }
    }

    func channelInactive(context: ChannelHandlerContext) { arrivals.finish() }
}
