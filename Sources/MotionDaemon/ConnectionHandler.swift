import Logging
import MotionWire
import NIOCore

/// One client connection: greets, splits the input into bounded lines, decodes requests and hands
/// them to the `Hub`; writes what the hub queues for it.
final class ConnectionHandler: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: every method runs on the channel's event loop, which is the hub's.
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let hub: Hub
    private var framer = LineFramer()
    private var client: Hub.ClientID?

    init(hub: Hub) { self.hub = hub }

    func channelActive(context: ChannelHandlerContext) {
        client = hub.connect(channel: context.channel)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let client { hub.disconnect(client) }
        client = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let client else { return }
        let buffer = unwrapInboundIn(data)
        for item in framer.feed(buffer.readableBytesView) {
            switch item {
            case .line(let line):
                if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { continue }
                switch Request.decode(line) {
                case .success(let request): hub.handle(request, from: client)
                case .failure(let error): hub.reply(error, to: client)
                }
            case .tooLong:
                hub.reply(ErrorReply(id: nil, code: .tooLong, message: "line longer than \(ProtocolVersion.maximumLineLength) bytes"), to: client)
            }
        }
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
