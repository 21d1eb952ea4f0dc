import Logging
import MotionSystem
import NIOCore

/// Watches a listening channel (the socket's, the metrics port's): counts its connections against a
/// limit, and keeps it from spinning when the process runs out of descriptors.
///
/// Out of descriptors, `accept` fails with EMFILE while the connection waits in the kernel, so the
/// listening socket stays readable; NIO keeps it registered when an accept fails before any succeeded
/// in a read, so its loop would wake again at once, for ever (100 % of a core, and the client never
/// hears a word). So the guard keeps one descriptor spare: on EMFILE it gives it up, the next accept
/// succeeds with it, that connection is refused (`admit` says so: the front end answers with its
/// protocol's error and closes), and the spare is taken again once it has closed. Said once per
/// episode in the log.
///
/// Added to the server channel's pipeline (`serverChannelInitializer`); `admit` is called by the
/// front end's child initializer. On the listening channel's loop.
///
/// NIO's own `AcceptBackoffHandler` is not enough: it delays the next `read`, which NIO never asks
/// for in that case.
package final class AcceptGuard: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: every method runs on the listening channel's event loop, which is the hub's.
    package typealias InboundIn = any Channel

    /// Why a connection is refused.
    package enum Refusal: Sendable {
        /// `limit` connections are open already.
        case tooManyConnections(limit: Int)
        /// The process has no descriptor left (this connection came in on the spare).
        case outOfDescriptors
    }

    private let name: String
    private let limit: Int
    private let logger: Logger
    private var spare: OwnedDescriptor?
    private var open = 0
    /// Whether the spare was given up for a connection that must be refused.
    private var starved = false
    /// Connections refused since descriptors ran out (nil: they have not, or a connection was admitted since).
    private var refusedWhileOut: Int?

    /// - Parameters:
    ///   - name: the front end, for the log ("socket", "metrics").
    ///   - limit: connections open at once (beyond, `admit` refuses).
    package init(name: String, limit: Int = .max, logger: Logger) {
        (self.name, self.limit, self.logger) = (name, limit, logger)
        keepSpare()
    }

    /// Takes a spare, if it has none.
    private func keepSpare() {
        if spare == nil { spare = try? Syscall.openReadOnly("/dev/null") }
    }

    /// Counts a new connection, or says why it is refused (the caller answers and closes it).
    package func admit(_ channel: any Channel) -> Refusal? {
        if starved {
            starved = false
            refusedWhileOut? += 1
            // Its descriptor, once closed, becomes the spare again.
            channel.closeFuture.whenComplete { [self] _ in keepSpare() }
            return .outOfDescriptors
        }
        guard open < limit else { return .tooManyConnections(limit: limit) }
        if let refused = refusedWhileOut {
            logger.notice("accepting connections again", metadata: ["listener": "\(name)", "refused while out of descriptors": "\(refused)"])
            refusedWhileOut = nil
        }
        open += 1
        channel.closeFuture.whenComplete { [self] _ in
            open -= 1
            keepSpare()  // a spare that could not be taken again is, once one frees
        }
        return nil
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let error = error as? IOError,
            error.errnoCode == ErrnoValue.processOutOfDescriptors || error.errnoCode == ErrnoValue.systemOutOfDescriptors
        else { return context.fireErrorCaught(error) }
        if refusedWhileOut == nil {
            logger.error(
                "out of file descriptors: refusing new connections until some close",
                metadata: ["listener": "\(name)", "open connections": "\(open)", "error": "\(Errno(rawValue: error.errnoCode))"])
            refusedWhileOut = 0
        }
        // Without a spare (another thread took the freed descriptor first), the loop spins as it did
        // before the guard, until one of this listener's connections closes and a spare is taken again.
        guard spare != nil else { return context.fireErrorCaught(error) }
        spare = nil  // closed
        starved = true
    }
}

/// A refused connection's whole life: `line` is written, then the connection is closed.
package final class RefusingHandler: ChannelInboundHandler, Sendable {
    package typealias InboundIn = ByteBuffer
    package typealias OutboundOut = ByteBuffer
    private let line: [UInt8]

    package init(line: [UInt8]) { self.line = line }

    package func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        channel.writeAndFlush(ByteBuffer(bytes: line)).whenComplete { _ in channel.close(promise: nil) }
    }

    /// What a refused client sends is not read.
    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}
