import Logging
import MotionHub
import MotionWire
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// One client connection: greets, splits the input into bounded lines, decodes requests and hands
/// them to the `Hub`; writes what the hub queues for it.
final class ConnectionHandler: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: every method runs on the channel's event loop, which is the hub's.
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let hub: Hub
    private var framer = LineFramer()
    private var client: Hub.ClientID?
    /// What the client sent that is not served yet: the rest of a read whose requests filled its
    /// queue. At most one read (NIO's, 64 KB at most): reading stays paused while it waits.
    private var unserved: ByteBuffer?
    /// Whether `serveUnserved` is running.
    private var serving = false
    /// Whether the client's input ended (it shut its writing side) while requests still waited: the
    /// hub is told once they are served, or it would close the connection before answering them.
    private var inputEnded = false

    init(hub: Hub) { self.hub = hub }

    func channelActive(context: ChannelHandlerContext) {
        let sink = ChannelSink(context.channel)
        sink.resume = { [weak self] in self?.serveUnserved() ?? false }
        guard let id = hub.connect(sink) else {
            let refusal = ErrorReply(id: nil, code: .unavailable, message: "too many clients (\(hub.maximumClients)); try again later")
            if let line = try? Wire.encode(refusal) { sink.write(ByteBuffer(bytes: line)) }
            sink.closeAfterWrites()
            return
        }
        client = id
        hub.greet(id)
        // Who connected, for the log (and, later, limits): the kernel's word, not the client's.
        if let provider = context.channel as? any SocketOptionProvider {
            let credentials: EventLoopFuture<PeerCredentials> = provider.unsafeGetSocketOption(
                level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
            credentials.whenSuccess { [hub] peer in
                hub.logger.info("client connected", metadata: ["client": "\(id)", "uid": "\(peer.uid)", "gid": "\(peer.gid)", "pid": "\(peer.pid)"])
            }
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let client { hub.disconnect(client) }
        client = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard client != nil else { return }  // refused: closing once told so
        unserved.setOrWriteImmutableBuffer(unwrapInboundIn(data))  // behind the requests still waiting
        _ = serveUnserved()
    }

    /// Serves the requests received, up to the one whose replies fill the client's queue (lines or
    /// bytes: a week's HISTORY is 79 KB); the rest waits, with reading paused, until the queue drains.
    /// Returns whether everything was served and reading may go on.
    private func serveUnserved() -> Bool {
        // A flush at the end of a batch can re-enter `channelRead`: its bytes are appended behind
        // the ones being served, and served by this call, in order.
        guard let client, !serving else { return false }
        serving = true
        defer { serving = false }
        while unserved.map({ $0.readableBytes > 0 }) == true, hub.acceptsRequests(client) {
            // The replies go out once this part of the read is framed (see `Hub.batch`); nothing
            // re-enters meanwhile, so `unserved` stays as it is until the batch ends.
            hub.batch {
                let taken = framer.feed(unserved!.readableBytesView) { item in
                    serve(item, from: client)
                    return hub.acceptsRequests(client)
                }
                unserved!.moveReaderIndex(forwardBy: taken)
            }
        }
        if unserved?.readableBytes == 0 { unserved = nil }
        // Disconnected for what it asked before: the rest is not worth decoding.
        guard hub.serves(client) else {
            unserved = nil
            return false
        }
        if inputEnded, unserved == nil {
            inputEnded = false
            hub.inputClosed(client)
        }
        hub.pauseReadingIfCongested(client)
        return unserved == nil && hub.acceptsRequests(client)
    }

    private func serve(_ item: LineFramer.Item, from client: Hub.ClientID) {
        switch item {
        case .line(let line):
            if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { return }
            switch Request.decode(line) {
            case .success(let request): hub.handle(request, from: client)
            case .failure(let error): hub.reply(error, to: client)
            }
        case .tooLong:
            hub.reply(ErrorReply(id: nil, code: .tooLong, message: "line longer than \(ProtocolVersion.maximumLineLength) bytes"), to: client)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event, let client {
            if unserved == nil { hub.inputClosed(client) } else { inputEnded = true }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let client { hub.flush(client) }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        hub.logger.info("client connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }
}

/// A client's NIO channel as the hub's `ClientSink`.
final class ChannelSink: ClientSink {
    private let channel: any Channel
    /// Serves what the connection received while paused; returns whether reading may go on.
    var resume: () -> Bool = { true }

    init(_ channel: any Channel) { self.channel = channel }

    var isWritable: Bool { channel.isWritable }

    func write(_ line: ByteBuffer) { channel.write(line, promise: nil) }

    func flush() { channel.flush() }

    func closeAfterWrites() {
        // An empty write completes after every earlier one: then close.
        channel.writeAndFlush(ByteBuffer()).whenComplete { [channel] _ in channel.close(promise: nil) }
    }

    func close() {
        // From the loop's next turn, not from inside the request handling that got here: a close
        // there re-enters the connection's handler while it is still framing the read.
        channel.eventLoop.execute { [channel] in channel.close(promise: nil) }
    }

    func setReading(_ reading: Bool) {
        guard reading else {
            channel.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in }
            return
        }
        // The requests held back go first, at the loop's next turn (not inside the flush that got
        // here); reading resumes only if they did not fill the queue again.
        let sink = NIOLoopBound(self, eventLoop: channel.eventLoop)
        channel.eventLoop.execute {
            guard sink.value.resume() else { return }
            sink.value.channel.setOption(ChannelOptions.autoRead, value: true).whenFailure { _ in }
        }
    }
}

/// `struct ucred` of socket(7), which Glibc's module does not export (it needs `_GNU_SOURCE`):
/// the pid, uid and gid of the process at the other end of a Unix socket, as SO_PEERCRED gives them.
struct PeerCredentials: Sendable {
    var pid: Int32
    var uid: UInt32
    var gid: UInt32
}
