import Logging
import MotionHub
import MotionSystem
import NIOCore
import NIOHTTP1
import NIOPosix

/// Serves the metrics over HTTP (`GET /metrics`, Prometheus's text format) on the hub's event loop:
/// a scrape reads the hub's totals in place, with no lock and no copy kept between scrapes.
///
/// Any local user can connect, so each connection is bounded: at most `maximumConnections` at once
/// (the next gets 503 and is closed), a request must be complete and its response taken within
/// `MetricsHandler.requestTimeout` of the connection's start or of the response before it, and a
/// connection that pipelines more than `MetricsHandler.maximumQueuedRequests` without reading is closed.
final class MetricsServer {
    /// Connections served at once: a scraper or two, and room for a person with curl.
    static let maximumConnections = 16

    private let channel: any Channel

    /// Where the metrics are served.
    var localAddress: SocketAddress? { channel.localAddress }

    /// Listens on `host`:`port`; `exposition` makes the page, on `eventLoop`.
    init(host: String, port: Int, eventLoop: any EventLoop, logger: Logger = Logger(label: "motiond"), exposition: @escaping @Sendable () -> [UInt8]) throws {
        let acceptGuard = AcceptGuard(name: "metrics", limit: Self.maximumConnections, logger: logger)
        let bootstrap = ServerBootstrap(group: eventLoop)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(acceptGuard) }
            }
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let refusal = acceptGuard.admit(channel) {
                        return try channel.pipeline.syncOperations.addHandler(RefusingHandler(line: Self.serviceUnavailable(refusal)))
                    }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withPipeliningAssistance: false, withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(MetricsHandler(exposition: exposition))
                }
            }
        do {
            channel = try bootstrap.bind(host: host, port: port).wait()
        } catch {
            let reason = (error as? IOError).map { "\(Errno(rawValue: $0.errnoCode))" } ?? "\(error)"
            throw ListenError(address: "\(host):\(port)", reason: reason)
        }
    }

    /// A whole 503 response saying why.
    private static func serviceUnavailable(_ refusal: AcceptGuard.Refusal) -> [UInt8] {
        let body =
            switch refusal {
            case .tooManyConnections(let limit): "too many connections (\(limit)); try again later\n"
            case .outOfDescriptors: "motiond is out of file descriptors; try again later\n"
            }
        return Array(
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)".utf8)
    }

    /// The address could not be listened on (in use, not this machine's, a name that does not resolve).
    struct ListenError: Error, CustomStringConvertible {
        var address: String
        var reason: String
        var description: String { "metrics \(address): cannot listen: \(reason)" }
    }

    /// Stops listening.
    func close() throws {
        try channel.close().wait()
    }
}

/// One HTTP connection: `GET /metrics` gets the page; anything else its status (404, 405).
///
/// Requests are answered one at a time, in order: the next only once the response before it has
/// been written to the socket and while the connection is writable, so that a client that sends and
/// never reads holds one response, not one per request. Reads stop while requests wait.
private final class MetricsHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Requests received and not yet answered that a connection may have; one more closes it.
    static let maximumQueuedRequests = 16
    /// The time a request may take to arrive and its response to be taken, from the connection's
    /// start or the previous response: header timeout and idle timeout in one.
    static let requestTimeout = TimeAmount.seconds(5)

    private let exposition: () -> [UInt8]
    /// The request being received.
    private var request: HTTPRequestHead?
    private var queued = CircularBuffer<HTTPRequestHead>()
    /// Whether a response is being written.
    private var responding = false
    /// Whether a read NIO asked for is held back while requests wait.
    private var readHeld = false
    private var timeout: Scheduled<Void>?

    init(exposition: @escaping () -> [UInt8]) {
        self.exposition = exposition
    }

    func handlerAdded(context: ChannelHandlerContext) { armTimeout(context: context) }

    func handlerRemoved(context: ChannelHandlerContext) { timeout?.cancel() }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): request = head
        case .body: break
        case .end:
            guard let request else { return }
            self.request = nil
            guard queued.count < Self.maximumQueuedRequests else { return context.close(promise: nil) }
            queued.append(request)
            respondIfReady(context: context)
        }
    }

    func read(context: ChannelHandlerContext) {
        if queued.isEmpty { context.read() } else { readHeld = true }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        respondIfReady(context: context)
        context.fireChannelWritabilityChanged()
    }

    private func armTimeout(context: ChannelHandlerContext) {
        timeout?.cancel()
        let channel = context.channel
        timeout = context.eventLoop.scheduleTask(in: Self.requestTimeout) { channel.close(promise: nil) }
    }

    private func respondIfReady(context: ChannelHandlerContext) {
        guard !responding, context.channel.isWritable, let request = queued.popFirst() else { return }
        responding = true
        let keepAlive = respond(to: request, context: context)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { [self] result in
            responding = false
            guard case .success = result, keepAlive else { return context.close(promise: nil) }
            armTimeout(context: context)
            respondIfReady(context: context)
            if readHeld && queued.isEmpty {
                readHeld = false
                context.read()
            }
        }
    }

    /// Writes the head and body of the response to `request`; whether the connection stays open.
    private func respond(to request: HTTPRequestHead, context: ChannelHandlerContext) -> Bool {
        let path = request.uri.prefix { $0 != "?" }
        let (status, body): (HTTPResponseStatus, [UInt8]) =
            switch (request.method, path) {
            case (.GET, "/metrics"), (.HEAD, "/metrics"): (.ok, exposition())
            case (_, "/metrics"): (.methodNotAllowed, Array("GET /metrics\n".utf8))
            default: (.notFound, Array("motiond serves its metrics at /metrics\n".utf8))
            }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: status == .ok ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: "\(body.count)")
        if status == .methodNotAllowed { headers.add(name: "Allow", value: "GET, HEAD") }
        let keepAlive = request.isKeepAlive
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))), promise: nil)
        if request.method != .HEAD { context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil) }
        return keepAlive
    }
}
