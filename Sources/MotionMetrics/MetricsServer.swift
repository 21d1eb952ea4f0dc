import MotionSystem
import NIOCore
import NIOHTTP1
import NIOPosix

/// Serves the metrics over HTTP (`GET /metrics`, Prometheus's text format) on the hub's event loop:
/// a scrape reads the hub's totals in place, with no lock and no copy kept between scrapes.
final class MetricsServer {
    private let channel: any Channel

    /// Where the metrics are served.
    var localAddress: SocketAddress? { channel.localAddress }

    /// Listens on `host`:`port`; `exposition` makes the page, on `eventLoop`.
    init(host: String, port: Int, eventLoop: any EventLoop, exposition: @escaping @Sendable () -> [UInt8]) throws {
        let address = "\(host):\(port)"
        let bootstrap = ServerBootstrap(group: eventLoop)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(MetricsHandler(exposition: exposition))
                }
            }
        do {
            channel = try bootstrap.bind(host: host, port: port).wait()
        } catch let error as IOError {
            throw ListenError(address: address, reason: "\(Errno(rawValue: error.errnoCode))")
        } catch {
            throw ListenError(address: address, reason: "\(error)")
        }
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
private final class MetricsHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let exposition: () -> [UInt8]
    private var request: HTTPRequestHead?

    init(exposition: @escaping () -> [UInt8]) {
        self.exposition = exposition
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): request = head
        case .body: break
        case .end:
            guard let request else { return }
            self.request = nil
            respond(to: request, context: context)
        }
    }

    private func respond(to request: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = request.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.uri
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
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            written.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
